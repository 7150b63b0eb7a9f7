/* eslint-disable @typescript-eslint/no-explicit-any -- axe's results are read field by field */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { createRemitClient, type RemitClient } from '../../packages/client/src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { emailedTokenIn } from '../helpers/people.ts';
import { ROOT, startServer, type ServerProcess } from '../helpers/processes.ts';
import { processDatabase, type ProcessDatabase } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';

/**
 * What every browser test of the console shares: a Remit process on an embedded database of its own
 * with one organization and its first admin, Debian's Chromium (headless, a fresh profile, nothing but
 * the server under test reachable), browser contexts that record Content-Security-Policy violations,
 * and the check every page gets (axe-core, no CSP violation, a screenshot).
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Into docs/console/ when asked (E2E_SCREENSHOTS=docs, to refresh the committed ones); otherwise a
// scratch folder, so an ordinary run leaves the working tree as it found it.
export const SHOTS =
  process.env.E2E_SCREENSHOTS === 'docs'
    ? path.join(ROOT, 'docs/console')
    : path.join(os.tmpdir(), 'remit-e2e-screenshots');
const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 375, height: 812 };
export const ADA = { name: 'Ada Lovelace', email: 'ada@acme.test', password: 'analytical engine 1843' };

export const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

export interface ConsoleRun {
  database: ProcessDatabase;
  server: ServerProcess;
  browser: Browser;
  /** Ada's API key, as `remit init` answered it. */
  api: RemitClient;
  organizationUid: string;
  adaUid: string;
}

/** `remit init` (organization "Acme Collections", Ada its admin), then the server and Chromium at once. */
export async function startConsoleRun(
  prefix: string,
  /** More of the server's environment (a fake Slack's, say). */
  extraEnv: Record<string, string> = {},
): Promise<ConsoleRun> {
  fs.mkdirSync(SHOTS, { recursive: true });
  const database = await processDatabase(prefix);
  const init = await runCli(
    ['init', '--org', 'Acme Collections', '--email', ADA.email, '--name', ADA.name, '--json'],
    database.env,
  );
  expect(init.code, init.stderr).toBe(0);
  const created = JSON.parse(init.stdout.trim()) as {
    organization_uid: string;
    user_uid: string;
    api_key: string;
  };
  const [server, browser] = await Promise.all([
    startServer({ ...database.env, ...extraEnv }),
    chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // A fresh profile per launch; nothing may reach the network but the server under test.
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    }),
  ]);
  return {
    database,
    server,
    browser,
    api: createRemitClient({ baseUrl: server.url, apiKey: created.api_key }),
    organizationUid: created.organization_uid,
    adaUid: created.user_uid,
  };
}

/** A browser context (English, Berlin time) that keeps every CSP violation of its pages. */
export async function newContext(
  browser: Browser,
  viewport = DESKTOP,
  storageState?: Awaited<ReturnType<BrowserContext['storageState']>>,
): Promise<BrowserContext> {
  const context = await browser.newContext({
    viewport,
    locale: 'en-US',
    timezoneId: 'Europe/Berlin',
    ...(storageState ? { storageState } : {}),
  });
  context.setDefaultTimeout(15_000);
  await context.addInitScript(() => {
    const w = window as unknown as { cspViolations: string[] };
    w.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (event) =>
      w.cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`),
    );
  });
  return context;
}

/** axe-core on the page as it is (no serious or critical violation), no CSP violation, a screenshot. */
export async function checkPage(page: Page, name: string, options: { fullPage?: boolean } = {}) {
  // Evaluated through DevTools, as an extension would: the page's CSP (rightly) refuses inline scripts.
  await page.evaluate(AXE_SOURCE);
  const results: any = await page.evaluate(() =>
    (window as any).axe.run(document, { resultTypes: ['violations'] }),
  );
  const serious = (results.violations as any[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n: any) => n.target.join(' ')).join('; ')}`,
    );
  expect(serious, `axe on ${name}`).toEqual([]);
  expect(await page.evaluate(() => (window as any).cspViolations), `CSP on ${name}`).toEqual([]);
  const file = path.join(SHOTS, `${name}.png`);
  if (options.fullPage) {
    // The whole page in a window as tall as it, so what sticks to the window's bottom sits in its place.
    const viewport = page.viewportSize()!;
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    await page.setViewportSize({ width: viewport.width, height: Math.max(height, viewport.height) });
    await page.screenshot({ path: file });
    await page.setViewportSize(viewport);
  } else {
    await page.screenshot({ path: file });
  }
}

/** Ada's first password, set through the emailed reset link by the API (the pages are console.e2e.ts's). */
export async function setFirstPassword(run: Pick<ConsoleRun, 'server' | 'database'>, person = ADA) {
  const open = createRemitClient({ baseUrl: run.server.url, maxRetries: 0 });
  await open.POST('/api/auth/password-reset', { body: { email: person.email } });
  const token = await until(() => {
    try {
      return Promise.resolve(emailedTokenIn(run.database.dataDir, person.email, '/reset-password'));
    } catch {
      return Promise.resolve(undefined);
    }
  }, 'the reset link');
  await open.POST('/api/auth/password-reset/confirm', { body: { token, password: person.password } });
}

/** Signs in on the sign-in page and waits for the inbox. */
export async function signIn(page: Page, serverUrl: string, person = ADA) {
  await page.goto(`${serverUrl}/app/sign-in`);
  await page.getByLabel('Email').fill(person.email);
  await page.getByLabel('Password', { exact: true }).fill(person.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${serverUrl}/app/inbox`);
}

/** Closes the browser, stops the server and drops its database (what a run started). */
export async function stopConsoleRun(run: Partial<Pick<ConsoleRun, 'browser' | 'server' | 'database'>>) {
  await run.browser?.close();
  run.server?.child.kill('SIGTERM');
  if (run.server) await run.server.exited;
  await run.database?.drop();
}
