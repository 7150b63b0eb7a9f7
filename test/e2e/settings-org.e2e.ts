import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RemitClient } from '../../packages/client/src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import {
  checkPage,
  newContext,
  PHONE,
  setFirstPassword,
  signIn,
  startConsoleRun,
  stopConsoleRun,
} from './harness.ts';

/**
 * The organization's settings in a real browser (docs/console.md#settings): the two switches (one
 * persisted through a reload, the second-factor rule asked about first and what it does to an admin
 * without one), email accounts (Remit's server, SMTP fields, a refused private host, a duplicate), the
 * billing integration set and removed, the default Slack channel on a server without Slack, what a
 * member sees, and each section at 375 px; axe-core and the CSP on each.
 *
 * The harness's server has neither SLACK_BOT_TOKEN nor ALLOW_PRIVATE_NETWORK_TARGETS: the settings say
 * `slack_configured: false` (a channel is stored unchecked) and private SMTP hosts are refused.
 * Public IP literals stand in for outside servers: nothing is sent to them (connecting an account or a
 * partner only checks the address), and no DNS is needed.
 */

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let organizationUid: string;
let page: Page;
const agents: Record<string, string> = {};
const GRACE = { name: 'Grace Hopper', email: 'grace@acme.test', password: 'compiler a-0 1952' };
const PUBLIC_HOST = '93.184.216.34';

const check = (name: string, options: { fullPage?: boolean } = {}) => checkPage(page, name, options);
const noSidewaysScroll = () =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);
/** What sticks out past the window's right edge (for the failure message). */
const widest = () =>
  page.evaluate(() =>
    [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
      .slice(0, 5)
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}`)
      .join(', '),
  );
const settingsNav = () => page.getByRole('navigation', { name: 'Settings' });
const openSection = async (label: string, id: string) => {
  await settingsNav().getByRole('link', { name: label }).click();
  await page.waitForURL(`${server.url}/app/settings/${id}`);
};

describe('the console: organization settings', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    ({ database, server, browser, api, organizationUid } = await startConsoleRun('remit-e2e-settings-org-'));
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
    await Promise.all([
      setFirstPassword({ server, database }),
      setFirstPassword({ server, database }, GRACE),
    ]);
    const agent = async (name: string, extra: Record<string, unknown> = {}) =>
      (
        await api.POST('/api/agents', {
          body: { name, agent_type: 'collections', status: 'active', ...extra },
        })
      ).data.uid;
    agents.collector = await agent('Collector', { notification_config: { chat_channel_id: 'C0COLLECT' } });
    agents.reminder = await agent('Reminder');

    page = await (await newContext(browser)).newPage();
    await signIn(page, server.url);
  }, 180_000);

  afterAll(() => stopConsoleRun({ browser, server, database }));

  const settings = () =>
    api.GET('/api/organization/{organization_uid}/settings', {
      params: { path: { organization_uid: organizationUid } },
    });

  it('organization: the switches, one kept through a reload; the second-factor rule asks first', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    // The person's own sections come first; the organization's follow.
    await page.waitForURL(`${server.url}/app/settings/account`);
    await page
      .getByRole('navigation', { name: 'Settings' })
      .getByRole('link', { name: 'Organization' })
      .click();
    await page.waitForURL(`${server.url}/app/settings/organization`);
    await page.getByRole('heading', { name: 'Organization', level: 1 }).waitFor();
    await page.locator('#main dd').getByText('Acme Collections', { exact: true }).waitFor();
    const segregation = page.getByRole('switch', { name: 'Segregation of duties' });
    expect(await segregation.isChecked()).toBe(false);
    await check('settings-organization');

    // By keyboard: Space on the focused switch.
    await segregation.focus();
    await page.keyboard.press('Space');
    await page.getByText('Segregation of duties is on.').waitFor();
    expect((await settings()).data.segregation_of_duties).toBe(true);
    await page.reload();
    await page.getByRole('switch', { name: 'Segregation of duties' }).waitFor();
    expect(await page.getByRole('switch', { name: 'Segregation of duties' }).isChecked()).toBe(true);

    // Requiring a second factor asks first; Cancel changes nothing and gives the switch its focus back.
    const mfa = page.getByRole('switch', { name: 'Require a second factor for admins' });
    await mfa.click();
    await page.getByText('Require a second factor of every admin?').waitFor();
    // The question's own link (the settings' navigation has one of the same name).
    const section = page.locator('.settings-section');
    expect(await section.getByRole('link', { name: 'Your account' }).getAttribute('href')).toBe(
      '/app/settings/account',
    );
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.textContent))
      .toBe('Require a second factor');
    await check('settings-organization-confirm');
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await mfa.isChecked()).toBe(false);
    await expect.poll(() => mfa.evaluate((el) => el === document.activeElement)).toBe(true);
    expect((await settings()).data.require_admin_mfa).toBe(false);

    // Confirmed: Ada has no second factor, so the organization now refuses her session; the page says so.
    await mfa.click();
    await page.getByRole('button', { name: 'Require a second factor' }).click();
    await page.getByText('Remit now refuses you in this organization').waitFor();
    expect((await settings()).data.require_admin_mfa).toBe(true);
    // Read again: refused (403 second_factor_required), said in words with the way out.
    await page.getByRole('button', { name: 'read the settings again' }).click();
    await page.getByText('This organization requires admins to use a second factor').waitFor();
    // Her API key is not affected: it turns the rule off again, and the page reads the settings anew.
    await api.PATCH('/api/organization/{organization_uid}/settings', {
      params: { path: { organization_uid: organizationUid } },
      body: { require_admin_mfa: false },
    });
    await page.getByRole('button', { name: 'Try again' }).click();
    await expect.poll(() => mfa.isChecked()).toBe(false);
  });

  it('email accounts: through Remit’s server, through SMTP fields, a private host and a duplicate refused', async () => {
    await openSection('Email accounts', 'email');
    await page.getByText('No email account yet').waitFor();

    await page.getByLabel('Email address', { exact: true }).fill('ar@acme.test');
    await page.getByLabel('Display name', { exact: true }).fill('Acme Receivables');
    await page.getByRole('button', { name: 'Connect account' }).click();
    await page.getByText('Connected ar@acme.test, sending through Remit’s mail server.').waitFor();
    const rows = page.locator('table tbody tr');
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('Remit’s mail server');

    // SMTP fields: the password with an @ and a colon goes URL-encoded; the page shows it masked.
    await page.getByLabel('Email address', { exact: true }).fill('billing@acme.test');
    await page.getByLabel('Display name', { exact: true }).fill('Acme Billing');
    await page.getByRole('radio', { name: /An SMTP server of this account/ }).check();
    await page.getByLabel('SMTP host', { exact: true }).fill(PUBLIC_HOST);
    await page.getByLabel('Security', { exact: true }).selectOption('tls');
    await page.getByLabel('Username', { exact: true }).fill('billing@acme.test');
    await page.getByLabel('Password', { exact: true }).fill('p@ss:word');
    await page.getByText(`smtps://billing%40acme.test:••••@${PUBLIC_HOST}:465`).waitFor();
    await page.getByRole('button', { name: 'Connect account' }).click();
    await page.getByText(`Connected billing@acme.test, sending through ${PUBLIC_HOST}:465.`).waitFor();
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(1).textContent()).toContain(`${PUBLIC_HOST}:465`);
    const listed = await api.GET('/api/email/accounts');
    expect(listed.data.items.map((a) => [a.email, a.has_smtp_url, a.smtp_host, a.smtp_port])).toEqual([
      ['ar@acme.test', false, null, null],
      ['billing@acme.test', true, PUBLIC_HOST, 465],
    ]);

    // A private host: the API's 422 in words, on the host field.
    await page.getByLabel('Email address', { exact: true }).fill('ops@acme.test');
    await page.getByRole('radio', { name: /An SMTP server of this account/ }).check();
    await page.getByLabel('SMTP host', { exact: true }).fill('127.0.0.1');
    await page.getByLabel('Port', { exact: true }).fill('2525');
    await page.getByRole('button', { name: 'Connect account' }).click();
    const refusal = page.getByRole('alert').filter({ hasText: 'The SMTP server was refused' });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('127.0.0.1 resolves to a loopback, private');
    expect(await page.getByLabel('SMTP host', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await check('settings-email', { fullPage: true });

    // The same address again: 409 in words, on the email field.
    await page.getByRole('radio', { name: /Remit’s mail server/ }).check();
    await page.getByLabel('Email address', { exact: true }).fill('AR@acme.test');
    await page.getByRole('button', { name: 'Connect account' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'An account for AR@acme.test already exists in this organization.' })
      .waitFor();
    expect((await api.GET('/api/email/accounts')).data.items).toHaveLength(2);
  });

  it('billing integration: connected, shown without its secret, removed after a confirmation', async () => {
    await openSection('Billing integration', 'billing');
    await page.getByText('No billing partner is connected.').waitFor();
    const url = `https://${PUBLIC_HOST}/remit/invoices`;
    await page.getByLabel('Partner address').fill(url);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await page.getByText(/The secret has 16 to 500 characters/).waitFor();
    await page.getByRole('button', { name: 'Generate' }).click();
    const secret = await page.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await page.getByText(`Connected: invoice changes are now sent to ${url}.`).waitFor();
    const partner = page.locator('section[aria-labelledby="partner-heading"]');
    expect(await partner.textContent()).toContain(url);
    expect(await partner.textContent()).toContain('Set (never shown again)');
    expect(await page.content()).not.toContain(secret);
    const stored = await api.GET('/api/organization/{organization_uid}/integrations/billing', {
      params: { path: { organization_uid: organizationUid } },
    });
    expect(stored.data).toMatchObject({ type: 'http', url, has_secret: true });
    await check('settings-billing');

    await page.getByRole('button', { name: 'Remove billing integration' }).click();
    await page.getByText('Remove the billing integration?').waitFor();
    await page.getByRole('button', { name: 'Remove', exact: true }).click();
    await page
      .getByText(`Removed the billing integration: invoice changes are no longer sent to ${url}.`)
      .waitFor();
    await page.getByText('No billing partner is connected.').waitFor();
    const gone = await api.raw.GET('/api/organization/{organization_uid}/integrations/billing', {
      params: { path: { organization_uid: organizationUid } },
    });
    expect(gone.response.status).toBe(404);
  });

  it('Slack: not connected on this server, so the channel is saved unchecked; agents with their own', async () => {
    await openSection('Slack', 'slack');
    await page.getByText('Slack is not connected on this server').waitFor();
    const collector = page.getByRole('link', { name: 'Collector' });
    expect(await collector.getAttribute('href')).toBe(`/app/agents/${agents.collector}`);
    await page.getByText('C0COLLECT').waitFor();
    await page.getByText('1 other agent posts to the default channel.').waitFor();

    await page.getByLabel('Channel ID').fill(' C0123ABCD ');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved C0123ABCD without a check').waitFor();
    expect((await settings()).data).toMatchObject({ slack_channel_id: 'C0123ABCD', slack_configured: false });
    await page.reload();
    await expect.poll(() => page.getByLabel('Channel ID').inputValue()).toBe('C0123ABCD');
    await check('settings-slack');

    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByText(/^Cleared: agents without a channel/).waitFor();
    expect((await settings()).data.slack_channel_id).toBeNull();
    await page.getByLabel('Channel ID').fill('C0123ABCD');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved C0123ABCD without a check').waitFor();
  });

  it('375 px: each section in one column, nothing scrolls sideways', async () => {
    await page.setViewportSize(PHONE);
    for (const [id, heading] of [
      ['organization', 'Organization'],
      ['email', 'Email accounts'],
      ['billing', 'Billing integration'],
      ['slack', 'Slack'],
    ] as const) {
      await page.goto(`${server.url}/app/settings/${id}`);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await page.locator('.state[role="status"]').first().waitFor({ state: 'detached' });
      expect(await noSidewaysScroll(), `${id}: ${await widest()}`).toBe(true);
      await check(`settings-${id}-phone`);
    }
  });

  it('a member sees the settings read only, and no billing integration', async () => {
    const context = await newContext(browser);
    const member = await context.newPage();
    const previous = page;
    page = member;
    try {
      await signIn(page, server.url, GRACE);
      await page.goto(`${server.url}/app/settings/organization`);
      await page.getByText('Only admins change these settings.').waitFor();
      expect(await page.getByRole('switch').count()).toBe(0);
      expect(await page.locator('.switch-readonly').first().textContent()).toContain('On');
      expect(await settingsNav().getByRole('link').allTextContents()).toEqual([
        'Your account',
        'API keys',
        'Organization',
        'Email accounts',
        'Slack',
      ]);
      await check('settings-member');

      await openSection('Email accounts', 'email');
      await page.getByText('Only admins connect email accounts.').waitFor();
      await expect.poll(() => page.locator('table tbody tr').count()).toBe(2);
      expect(await page.getByRole('button', { name: 'Connect account' }).count()).toBe(0);

      await openSection('Slack', 'slack');
      await page.getByText('Only admins change the default channel.').waitFor();
      expect(
        await page.locator('section[aria-labelledby="default-channel-heading"]').textContent(),
      ).toContain('C0123ABCD');
      expect(await page.getByLabel('Channel ID').count()).toBe(0);
      await check('settings-member-slack');

      // The billing section is not theirs: its address opens the first one they may see.
      await page.goto(`${server.url}/app/settings/billing`);
      await page.waitForURL(`${server.url}/app/settings/account`);
    } finally {
      page = previous;
      await context.close();
    }
  });
});
