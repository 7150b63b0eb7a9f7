import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemitClient, type RemitClient } from '../../packages/client/src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import {
  checkPage,
  DESKTOP,
  newContext,
  PHONE,
  setFirstPassword,
  signIn,
  startConsoleRun,
  stopConsoleRun,
} from './harness.ts';

/**
 * The inbox under an approval policy (docs/approvals.md, docs/console.md#the-approval-inbox): the rule
 * in words (who, how many and who so far, the initiator barred, the deadline in the person's time zone),
 * Approve disabled with the reason for the person who started the run, and an approval that does not
 * complete the count says what is still needed. Ada (admin) in the browser; Grace (member) through the
 * API.
 */

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let ada: RemitClient;
let grace: RemitClient;
let page: Page;
let agentUid: string;

const POLICY = 'Payments over $5,000';

async function raise(client: RemitClient, title: string, amountCents: number) {
  const { data } = await client.POST('/api/agents/{agent_uid}/approvals', {
    params: { path: { agent_uid: agentUid } },
    body: {
      title,
      reasoning: 'Globex invoice G-311 is due tomorrow; paying today keeps the early-payment discount.',
      tool_args: { type: 'payment', payee: 'Globex Corporation', amount_cents: amountCents, currency: 'USD' },
      trigger: { type: 'manual' },
    },
  });
  return data;
}

const decidePanel = () => page.getByRole('region', { name: 'Who can decide' });

describe('the inbox under an approval policy', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    let organizationUid: string;
    ({ database, server, browser, api: ada, organizationUid } = await startConsoleRun('remit-e2e-policies-'));
    const created = await runCli(
      [
        'users',
        'create',
        '--org',
        organizationUid,
        '--email',
        'grace@acme.test',
        '--name',
        'Grace Hopper',
        '--role',
        'member',
        '--json',
      ],
      database.env,
    );
    expect(created.code, created.stderr).toBe(0);
    grace = createRemitClient({
      baseUrl: server.url,
      apiKey: (JSON.parse(created.stdout.trim()) as { api_key: string }).api_key,
    });
    await setFirstPassword({ server, database });
    agentUid = (await ada.POST('/api/agents', { body: { name: 'Payments bot', status: 'active' } })).data.uid;
    await ada.POST('/api/approval-policies', {
      body: {
        name: POLICY,
        agent_uid: agentUid,
        tool_type: 'payment',
        min_amount_cents: 500_000,
        approver_roles: ['admin', 'member'],
        required_approvals: 2,
        forbid_initiator: true,
        expires_after_minutes: 180,
      },
    });
    page = await (await newContext(browser, DESKTOP)).newPage();
    await signIn(page, server.url);
  });

  afterAll(async () => {
    await stopConsoleRun({ browser, server, database });
  });

  it('the rule in words; Approve is disabled, with the reason, for the person who started the run', async () => {
    const task = await raise(ada, 'Pay Globex $7,500', 750_000);
    await page.goto(`${server.url}/app/inbox/${task.uid}`);
    const panel = decidePanel();
    await panel.getByText(`Policy ${POLICY}: Admins and members, 2 different people.`).waitFor();
    await panel.getByText('2 approvals needed · 0 received').waitFor();
    await panel.getByText('You started this run: someone else must approve it.').waitFor();
    // Three hours ahead, in the person's time zone (the context is Berlin's).
    await expect(
      panel.getByText(/^Expires in 3 hours \(.+\); then the action will not happen\.$/).count(),
    ).resolves.toBe(1);
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    await expect(approve.isDisabled()).resolves.toBe(true);
    await expect(approve.getAttribute('aria-describedby')).resolves.toBeTruthy();
    await page
      .getByText('You started this run: someone else must approve it. You may still reject it.')
      .waitFor();
    await expect(page.getByRole('button', { name: 'Reject' }).isEnabled()).resolves.toBe(true);
    // The shortcut takes the person to the reason instead of approving.
    await page.locator('body').press('a');
    await expect(page.evaluate(() => document.activeElement?.className)).resolves.toBe('decision-note');
    await checkPage(page, 'inbox-policy-initiator', { fullPage: true });

    // Grace approves through the API: the page's poll shows her approval, still one short.
    await grace.PATCH('/api/work-tasks/{task_uid}', {
      params: { path: { task_uid: task.uid } },
      body: { action: 'approve' },
    });
    await panel.getByText('2 approvals needed · 1 received: Grace Hopper').waitFor();

    await page.setViewportSize(PHONE);
    await panel.getByText('You started this run: someone else must approve it.').waitFor();
    const sideways = await page.evaluate(
      () => document.documentElement.scrollWidth > document.documentElement.clientWidth,
    );
    expect(sideways).toBe(false);
    await checkPage(page, 'inbox-policy-phone', { fullPage: true });
    await page.setViewportSize(DESKTOP);
  });

  it('an approval short of the count is recorded and says what is still needed', async () => {
    const task = await raise(grace, 'Pay Globex $9,000', 900_000);
    await page.goto(`${server.url}/app/inbox/${task.uid}`);
    await decidePanel().getByText('2 approvals needed · 0 received').waitFor();
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page
      .getByRole('status')
      .getByText(
        'Your approval is recorded (1 of 2). It needs 1 more approval from someone else before the agent acts.',
      )
      .waitFor();
    await decidePanel().getByText('2 approvals needed · 1 received: Ada Lovelace').waitFor();
    await page.getByText('You approved this already; it needs 2 approvals from different people.').waitFor();
    await expect(page.getByRole('button', { name: 'Approve', exact: true }).isDisabled()).resolves.toBe(true);
    // Still waiting in the list, and undecided on the server.
    await page.getByRole('link', { name: /Pay Globex \$9,000/ }).waitFor();
    const { data } = await ada.GET('/api/work-tasks/{task_uid}', {
      params: { path: { task_uid: task.uid } },
    });
    expect(data).toMatchObject({ status: 'in_review', resolution: null });
    await checkPage(page, 'inbox-policy-counted', { fullPage: true });
  });
});
