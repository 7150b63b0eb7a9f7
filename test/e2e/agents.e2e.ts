import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RemitClient } from '../../packages/client/src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { FakeLlm } from '../helpers/fake-llm.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';
import {
  checkPage,
  daysAgo,
  newContext,
  PHONE,
  setFirstPassword,
  signIn,
  startConsoleRun,
  stopConsoleRun,
} from './harness.ts';

/**
 * The console's Agents pages in a real browser (docs/console.md#agents): the list, an agent created and
 * edited, runs started (sandbox and real) and followed as they end, a run's timeline with the approval it
 * raised, cancelling a pending and a running run (and the 409 of one that ended meanwhile), token usage
 * for the admin and not for a member; axe-core and the CSP on each page, screenshots, 375 px.
 *
 * The server's language model is a local fake (test/helpers/fake-llm.ts): reminders are written by
 * "inference", so runs have token usage, and the test can hold a model call open — the run then stays
 * `running`, and as each worker executes one run at a time, a run started meanwhile stays `pending`.
 */

const GRACE = { name: 'Grace Hopper', email: 'grace@acme.test', password: 'compile the nanoseconds' };
const REMINDER = {
  subject: 'Invoice AR-1042 is 40 days overdue',
  body_text:
    'Hello Hank,\n\nInvoice AR-1042 still has €1,234.50 open. Could you let us know when it will be paid?',
};
const USAGE = { prompt_tokens: 812, completion_tokens: 164 };

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let llm: FakeLlm;
let ada: BrowserContext;
let page: Page;
let collectorUid: string;

/** expect.poll waits 1 s by default: pages load and poll (every 2.5 s) slower than that. */
const soon = { timeout: 20_000 };
const runRows = (p: Page = page) => p.locator('table.runs-table tbody tr');
/** What sticks out of the window sideways (nothing, when the page does not scroll sideways). */
const overflowing = (p: Page) =>
  p.evaluate(() => {
    const width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth <= width) return [];
    return [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > width + 1 && !el.closest('.table-box'))
      .slice(0, 5)
      .map(
        (el) =>
          `${el.tagName.toLowerCase()}.${el.className} → ${Math.round(el.getBoundingClientRect().right)}px`,
      );
  });

/** The newest runs of an agent, through the API. */
async function runsOf(agentUid: string) {
  const { data } = await api.GET('/api/agents/{agent_uid}/activities', {
    params: { path: { agent_uid: agentUid }, query: { sort: '-created_on', per_page: 100 } },
  });
  return data.items;
}

describe('the console: agents', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    llm = await new FakeLlm().start();
    llm.behaviour = { kind: 'succeed', content: JSON.stringify(REMINDER), usage: USAGE };
    // The Remit process takes its environment from this one (test/helpers/processes.ts): its model is
    // the fake. Set only while it starts.
    const saved = { ...process.env };
    Object.assign(process.env, {
      LLM_BASE_URL: llm.baseUrl,
      LLM_MODEL: 'fake-model',
      LLM_TIMEOUT_MS: '30000',
    });
    try {
      ({ database, server, browser, api } = await startConsoleRun('remit-e2e-agents-'));
    } finally {
      for (const name of ['LLM_BASE_URL', 'LLM_MODEL', 'LLM_TIMEOUT_MS'])
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
    }
    const organizationUid = (await api.GET('/api/me')).data.memberships[0]!.organization_uid;

    await setFirstPassword({ server, database });
    // Grace, a member: beside the server, over its admin socket, as `remit users create`.
    const grace = await runCli(
      [
        'users',
        'create',
        '--org',
        organizationUid,
        '--email',
        GRACE.email,
        '--name',
        GRACE.name,
        '--role',
        'member',
        '--json',
      ],
      database.env,
    );
    expect(grace.code, grace.stderr).toBe(0);
    await setFirstPassword({ server, database }, GRACE);

    // What the collections agent chases: an overdue receivable of a client with a billing contact, and
    // the account an approved reminder is sent from.
    await api.POST('/api/email/accounts', {
      body: { email: 'ar@acme.test', display_name: 'Acme Receivables' },
    });
    const globex = await api.POST('/api/parties', {
      body: {
        name: 'Globex Corporation',
        role: 'client',
        billing_contact: { name: 'Hank Scorpio', email: 'ap@globex.test' },
      },
    });
    await api.POST('/api/products', {
      body: {
        sku: 'CONSULT',
        name: 'Consulting day',
        context_type: 'PRODUCT',
        unit_price: 41_150,
        currency: 'EUR',
      },
    });
    await api.POST('/api/invoices', {
      body: {
        invoice_type: 'ACCOUNTS_RECEIVABLE',
        invoice_number: 'AR-1042',
        status: 'open',
        currency: 'EUR',
        issue_date: daysAgo(70),
        due_date: daysAgo(40),
        client_party_uid: globex.data.uid,
        line_items: [{ context_type: 'PRODUCT', sku: 'CONSULT', quantity: 3 }],
      },
    });
    const collector = await api.POST('/api/agents', {
      body: {
        name: 'Collector',
        agent_type: 'collections',
        status: 'active',
        description: 'Chases overdue receivables with reminders a person approves.',
        instructions: 'Be polite and firm.\nName the invoice and the amount still open.',
        triggers: [{ type: 'manual' }, { type: 'schedule', cron: '0 9 * * *' }],
        // No Slack configured: the channel is stored, and events are recorded in Remit.
        notification_config: { chat_channel_id: 'C0COLLECT', events: { digest: true } },
      },
    });
    collectorUid = collector.data.uid;

    ada = await newContext(browser);
    page = await ada.newPage();
    await signIn(page, server.url);
  }, 180_000);

  afterAll(async () => {
    await stopConsoleRun({ browser, server, database });
    await llm?.close();
  });

  it('the list; a custom agent created, refused a real run while a draft, then edited and activated', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
    await page.waitForURL(`${server.url}/app/agents`);
    const row = page.locator('table.data-table tbody tr').filter({ hasText: 'Collector' });
    await row.waitFor();
    expect(await row.textContent()).toContain('Manual · every day at 09:00 UTC');
    expect(await row.textContent()).toContain('Active');
    await checkPage(page, 'agents');

    await page.getByLabel('Status').selectOption('paused');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/\?status=paused$/);
    await page.getByText('No agent has this status').waitFor();
    await checkPage(page, 'agents-empty');
    await page.getByRole('link', { name: 'Clear filters' }).click();
    await row.waitFor();

    await page.getByRole('button', { name: 'New agent' }).click();
    await page.getByLabel('Name').fill('Dunning drafts');
    await page.getByLabel('Type').selectOption('custom');
    await page.getByLabel('Description').fill('Drafts dunning letters for an outside runtime.');
    await page.getByLabel('Instructions').fill('Draft a note.');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('heading', { name: 'Dunning drafts', level: 1 }).waitFor();
    const uid = /\/app\/agents\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    await page.getByText('Draft', { exact: true }).first().waitFor();

    // A real run of a draft: the API's 409, said in words.
    await page.getByRole('button', { name: 'Start run' }).click();
    await page
      .getByText(/Not started: Dunning drafts is draft, and only an active agent runs for real/)
      .waitFor();

    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Instructions').fill('Draft a firm note.\nKeep it short.');
    await page.getByLabel('Status', { exact: true }).selectOption('active');
    await page.getByRole('button', { name: 'Add trigger' }).click();
    await page.getByLabel('Trigger 1', { exact: true }).selectOption('schedule');
    await page.getByLabel('Trigger 1 cron (UTC)').fill('30 8 * * 1-5');
    await page.getByText('Runs every weekday at 08:30 UTC.').waitFor();
    await checkPage(page, 'agent-edit', { fullPage: true });
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved “Dunning drafts”.').waitFor();
    const { data: saved } = await api.GET('/api/agents/{agent_uid}', {
      params: { path: { agent_uid: uid } },
    });
    expect(saved).toMatchObject({
      name: 'Dunning drafts',
      status: 'active',
      instructions: 'Draft a firm note.\nKeep it short.',
      triggers: [{ type: 'schedule', cron: '30 8 * * 1-5' }],
    });
    // Instructions keep their lines.
    expect(await page.locator('.definition .instructions').innerText()).toBe(
      'Draft a firm note.\nKeep it short.',
    );

    // Active now: a real run starts; with no built-in executor it waits, `pending`, for an outside
    // runtime to claim it (docs/agents.md#runs-of-outside-runtimes), and the list says so.
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByText(/^Run started/).waitFor();
    await expect.poll(() => runRows().first().locator('.run-status').textContent(), soon).toBe('Pending');
  });

  it('a sandbox run of the collections agent: it appears, completes, and its timeline says what it would do', async () => {
    await page.goto(`${server.url}/app/agents/${collectorUid}`);
    await page.getByRole('heading', { name: 'Collector', level: 1 }).waitFor();
    await page.getByText('No runs yet').waitFor();
    await page.getByLabel('Sandbox').check();
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByText(/^Sandbox run started/).waitFor();
    await expect.poll(() => runRows().count(), soon).toBe(1);
    // Polled until it ends, without a reload.
    await expect
      .poll(() => runRows().first().locator('.run-status').textContent(), soon)
      .toBe('CompletedSandbox');
    const row = runRows().first();
    expect(await row.textContent()).toContain(
      'Sandbox (nothing sent, no approval raised): 1 overdue invoice(s) checked',
    );
    // Ada is an admin: the token usage of the run's model calls (one reminder written).
    expect(await page.getByRole('columnheader', { name: 'Tokens' }).count()).toBe(1);
    expect(await row.locator('.tokens-total').textContent()).toBe('976');

    await row.getByRole('link').first().click();
    await page.getByRole('heading', { name: 'Run of Collector' }).waitFor();
    const timeline = page.locator('.run-timeline');
    // The run's outcome notification ([sandbox], never posted) is folded into its end.
    await expect
      .poll(() => timeline.textContent(), soon)
      .toContain('Outcome notification: Recorded in Remit');
    const text = await timeline.innerText();
    expect(text).toMatch(/Requested as a sandbox run · Manual/);
    expect(text).toContain('Started');
    expect(text).toMatch(/Completed/);
    await page.getByRole('heading', { name: 'Approvals it would ask for (1)' }).waitFor();
    await page.getByRole('link', { name: 'Invoice AR-1042' }).first().waitFor();
    await page.getByText(`“${REMINDER.subject}” to ap@globex.test`).click();
    await page.locator('.email-args').getByText('Could you let us know when it will be paid?').waitFor();
    expect(await page.getByTestId('run-tokens').innerText()).toContain('976 total');
    await checkPage(page, 'agent-run-sandbox', { fullPage: true });
  });

  it('cancel: a pending run from its button; a run that ended meanwhile says so (409)', async () => {
    await page.goto(`${server.url}/app/agents/${collectorUid}`);
    await page.getByRole('heading', { name: 'Collector', level: 1 }).waitFor();
    // The model holds its answer: the first run stays running, the worker busy, the second pending.
    let release!: () => void;
    llm.behaviour = { kind: 'hold', until: new Promise<void>((resolve) => (release = resolve)) };
    try {
      const asked = llm.requests.length;
      await page.getByLabel('Sandbox').check();
      await page.getByRole('button', { name: 'Start run' }).click();
      await until(() => Promise.resolve(llm.requests.length > asked), 'the held run to ask the model');
      await page.getByRole('button', { name: 'Start run' }).click();
      await expect.poll(() => runRows().count(), soon).toBe(3);
      const [pending, running] = (await runsOf(collectorUid)).slice(0, 2);
      expect([pending!.attributes.status, running!.attributes.status]).toEqual(['pending', 'running']);
      const pendingRow = page.locator(`tr[data-run="${pending!.id}"]`);
      const runningRow = page.locator(`tr[data-run="${running!.id}"]`);
      await expect.poll(() => runningRow.locator('.run-status').textContent(), soon).toBe('RunningSandbox');
      expect(await pendingRow.locator('.run-status').textContent()).toBe('PendingSandbox');
      await checkPage(page, 'agent-runs-active');

      await pendingRow.getByRole('button', { name: /^Cancel the run requested/ }).click();
      await page.getByText('Run cancelled.').waitFor();
      await expect.poll(() => pendingRow.locator('.run-status').textContent(), soon).toBe('CancelledSandbox');

      // The running one is cancelled elsewhere while this page's reads are held: its button still shows,
      // and the API's 409 is said in words, then the row shows the run as it is.
      let releaseReads!: () => void;
      const reads = new Promise<void>((resolve) => (releaseReads = resolve));
      await page.route(
        (url) => url.pathname === `/api/agents/${collectorUid}/activities`,
        async (route) => {
          await reads;
          await route.continue();
        },
      );
      await api.POST('/api/agent-runs/{run_uid}/cancel', { params: { path: { run_uid: running!.id } } });
      await runningRow.getByRole('button', { name: /^Cancel the run requested/ }).click();
      await page.getByText('This run could not be cancelled: it had already ended (cancelled).').waitFor();
      releaseReads();
      await page.unrouteAll({ behavior: 'wait' });
      await expect.poll(() => runningRow.locator('.run-status').textContent(), soon).toBe('CancelledSandbox');
      expect(
        await runRows()
          .getByRole('button', { name: /^Cancel/ })
          .count(),
      ).toBe(0);
    } finally {
      // The model answers: the held run finds itself cancelled at its next step (the next test's run
      // waits behind it on the worker), and the pending one never runs.
      release();
      llm.behaviour = { kind: 'succeed', content: JSON.stringify(REMINDER), usage: USAGE };
    }
    expect((await runsOf(collectorUid)).slice(0, 2).map((r) => r.attributes.status)).toEqual([
      'cancelled',
      'cancelled',
    ]);
  });

  it('a real run raises an approval, linked from its timeline to the inbox', async () => {
    await page.goto(`${server.url}/app/agents/${collectorUid}`);
    await page.getByRole('heading', { name: 'Collector', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByText(/^Run started/).waitFor();
    // Behind the held run's job, which the worker finishes first.
    await expect
      .poll(() => runRows().first().locator('.run-status').textContent(), { timeout: 30_000 })
      .toBe('Completed');
    expect(await runRows().first().textContent()).toContain('1 approval(s) requested');
    await checkPage(page, 'agent', { fullPage: true });

    await runRows().first().getByRole('link').first().click();
    await page.getByRole('heading', { name: 'Run of Collector' }).waitFor();
    const timeline = page.locator('.run-timeline');
    await expect
      .poll(() => timeline.textContent(), soon)
      .toContain('Outcome notification: Recorded in Remit');
    expect(await timeline.innerText()).toMatch(
      /Approval required .*\n+Collector needs approval: Invoice AR-1042 for Globex Corporation is 40 day\(s\) overdue/,
    );
    await page.getByRole('heading', { name: 'Approvals raised (1)' }).waitFor();
    await checkPage(page, 'agent-run', { fullPage: true });

    const [run] = await runsOf(collectorUid);
    const taskUid = (run!.attributes.outcome as { approvals: { task_uid: string }[] }).approvals[0]!.task_uid;
    await timeline.getByRole('link', { name: 'Open the approval' }).click();
    await page.waitForURL(`${server.url}/app/inbox/${taskUid}`);
    await page.getByRole('heading', { name: 'Send payment reminder for invoice AR-1042' }).waitFor();
  });

  it('a member sees runs without token usage (never asked for); 375 px', async () => {
    const graceContext = await newContext(browser);
    const grace = await graceContext.newPage();
    const asked: string[] = [];
    grace.on('request', (request) => asked.push(decodeURIComponent(request.url())));
    await signIn(grace, server.url, GRACE);
    await grace.goto(`${server.url}/app/agents/${collectorUid}`);
    await expect.poll(() => runRows(grace).count(), soon).toBe(4);
    expect(await grace.getByRole('columnheader', { name: 'Tokens' }).count()).toBe(0);
    await runRows(grace).first().getByRole('link').first().click();
    await grace.getByRole('heading', { name: 'Run of Collector' }).waitFor();
    await grace.getByRole('heading', { name: 'Approvals raised (1)' }).waitFor();
    expect(await grace.getByText('Token usage').count()).toBe(0);
    expect(asked.filter((url) => url.includes('token_usage'))).toEqual([]);
    expect(asked.some((url) => url.includes('fields[agent-runs]='))).toBe(true);
    await checkPage(grace, 'agent-run-member');
    await graceContext.close();

    const phone = await newContext(browser, PHONE, await ada.storageState());
    const small = await phone.newPage();
    await small.goto(`${server.url}/app/agents`);
    await small.locator('table.data-table tbody tr').first().waitFor();
    expect(await overflowing(small)).toEqual([]);
    await checkPage(small, 'agents-phone');
    await small.goto(`${server.url}/app/agents/${collectorUid}`);
    await expect.poll(() => runRows(small).count(), soon).toBe(4);
    expect(await overflowing(small)).toEqual([]);
    await checkPage(small, 'agent-phone', { fullPage: true });
    await runRows(small).first().getByRole('link').first().click();
    await small.getByRole('heading', { name: 'Approvals raised (1)' }).waitFor();
    expect(await overflowing(small)).toEqual([]);
    await checkPage(small, 'agent-run-phone', { fullPage: true });
    await phone.close();
  });
});
