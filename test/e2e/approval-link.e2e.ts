import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemitClient, type RemitClient } from '../../packages/client/src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { outboxMessagesIn } from '../helpers/people.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';
import { ADA, checkPage, daysAgo, newContext, PHONE, startConsoleRun, stopConsoleRun } from './harness.ts';

/**
 * Deciding an approval from its email, in a real browser (docs/approval-emails.md, docs/console.md):
 * Ada opts in through the API, an outside runtime (Bob's key) raises an approval, the link is read from
 * the server's outbox and opened in a browser that is signed in to nothing. The page shows the request
 * and decides only when a button is pressed; a used link, a link about an approval someone else decided
 * and a broken link each say so. axe-core and the CSP on every state; screenshots for the docs.
 */

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let bob: RemitClient;
let agentUid: string;
let invoiceUid: string;
let bobName: string;

async function raise(title: string) {
  const { data } = await bob.POST('/api/agents/{agent_uid}/approvals', {
    params: { path: { agent_uid: agentUid } },
    body: {
      title,
      reasoning:
        'INV-1042 is 12 days overdue and Globex has not answered the first reminder. A second, firmer reminder with the invoice attached is the next step.',
      tool_args: {
        type: 'send_email',
        subject: 'Second reminder: invoice INV-1042',
        recipients: ['ap@globex.test'],
        body: 'Dear Hank,\n\nInvoice INV-1042 (€4,115.00) was due 12 days ago. Please let us know when we can expect payment.\n\nBest regards,\nAcme Collections',
        invoice_uid: invoiceUid,
      },
      trigger: { type: 'schedule' },
      priority: 'high',
      context_entities: [{ entity_type: 'invoice', entity_uid: invoiceUid }],
    },
  });
  return data;
}

/** The link of Ada's email about `title`, on the server under test. */
async function linkAbout(title: string): Promise<string> {
  const token = await until(() => {
    const message = outboxMessagesIn(database.dataDir, ADA.email).find((m) =>
      m.includes(`Subject: Approval needed: ${title}`),
    );
    return Promise.resolve(message ? /\/approval\?token=([\w.-]+)/.exec(message)?.[1] : undefined);
  }, `the approval email about ${title}`);
  return `${server.url}/approval?token=${token}`;
}

async function taskNow(uid: string) {
  const { data } = await api.GET('/api/work-tasks/{task_uid}', { params: { path: { task_uid: uid } } });
  return data;
}

async function open(context: BrowserContext, link: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(link);
  return page;
}

describe('the approval link page', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    let organizationUid: string;
    ({ database, server, browser, api, organizationUid } = await startConsoleRun('remit-e2e-approval-link-'));
    bobName = 'Bob Byron';
    const created = await runCli(
      [
        'users',
        'create',
        '--org',
        organizationUid,
        '--email',
        'bob@acme.test',
        '--name',
        bobName,
        '--role',
        'member',
        '--json',
      ],
      database.env,
    );
    expect(created.code, created.stderr).toBe(0);
    bob = createRemitClient({
      baseUrl: server.url,
      apiKey: (JSON.parse(created.stdout.trim()) as { api_key: string }).api_key,
    });

    const globex = await api.POST('/api/parties', {
      body: {
        name: 'Globex Corporation',
        role: 'client',
        billing_contact: { name: 'Hank', email: 'ap@globex.test' },
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
    const invoice = await api.POST('/api/invoices', {
      body: {
        invoice_type: 'ACCOUNTS_RECEIVABLE',
        invoice_number: 'INV-1042',
        status: 'open',
        currency: 'EUR',
        issue_date: daysAgo(42),
        due_date: daysAgo(12),
        client_party_uid: globex.data.uid,
        line_items: [{ context_type: 'PRODUCT', sku: 'CONSULT', quantity: 10 }],
      },
    });
    invoiceUid = invoice.data.uid;
    const agent = await api.POST('/api/agents', { body: { name: 'Collections agent', status: 'active' } });
    agentUid = agent.data.uid;

    // Ada wants approvals by email; Bob (who raises them) does not need to.
    const prefs = await api.PATCH('/api/me/preferences', { body: { approval_emails: true } });
    expect(prefs.data.approval_emails).toBe(true);
  });

  afterAll(async () => {
    await stopConsoleRun({ browser, server, database });
  });

  it('opens without a session, shows the request, decides nothing until a button; rejects with a reason', async () => {
    const task = await raise('Send a second reminder for INV-1042?');
    const link = await linkAbout(task.title);
    const context = await newContext(browser);
    const page = await open(context, link);

    await page.getByRole('heading', { level: 1, name: task.title }).waitFor();
    // The token left the address bar; the page is the console's, under /app.
    expect(new URL(page.url()).pathname).toBe('/app/approval');
    expect(page.url()).not.toContain('token=');
    await page.getByText('This link is for Ada Lovelace').waitFor();
    await page.getByText('Collections agent').first().waitFor();
    await page.locator('dd.amount', { hasText: '€4,115.00' }).waitFor();
    await page.getByText('12 days', { exact: true }).waitFor();
    await page.getByText('Second reminder: invoice INV-1042').waitFor();
    // Opening it decided nothing.
    expect((await taskNow(task.uid)).resolution).toBeNull();
    await checkPage(page, 'approval-link', { fullPage: true });

    // A rejection needs a reason: the field says so and takes the focus.
    await page.getByRole('button', { name: 'Reject' }).click();
    await page.getByText('Give a reason to reject').waitFor();
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('TEXTAREA');
    expect((await taskNow(task.uid)).resolution).toBeNull();

    await page.getByLabel('Reason').fill('Hank called: payment goes out Friday.');
    await page.getByRole('button', { name: 'Reject' }).click();
    await page.getByText('You rejected this').waitFor();
    await page.getByText('will not do it').waitFor();
    await expect(page.getByRole('button', { name: 'Approve' }).count()).resolves.toBe(0);
    const decided = await taskNow(task.uid);
    expect(decided).toMatchObject({
      status: 'canceled',
      resolution: 'rejected',
      resolution_note: 'Hank called: payment goes out Friday.',
    });
    expect(decided.resolved_by?.user_name).toBe(ADA.name);
    await checkPage(page, 'approval-link-decided');

    // The same link again: it says it was used, and what was decided.
    const again = await open(context, link);
    await again.getByText('This link was already used').waitFor();
    await again.getByText(`Rejected by ${ADA.name}`).waitFor();
    await expect(again.getByRole('button', { name: 'Approve' }).count()).resolves.toBe(0);
    await checkPage(again, 'approval-link-used');
    await context.close();
  });

  it('on a phone: someone decides first, and the page says who won', async () => {
    const task = await raise('Send a final notice for INV-1042?');
    const link = await linkAbout(task.title);
    const context = await newContext(browser, PHONE);
    const page = await open(context, link);
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth),
    ).toBe(true);
    await checkPage(page, 'approval-link-phone', { fullPage: true });

    // Bob decides through the API while the page is open.
    await bob.PATCH('/api/work-tasks/{task_uid}', {
      params: { path: { task_uid: task.uid } },
      body: { action: 'approve', resolution_note: 'Go ahead' },
    });
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Your decision was not recorded').waitFor();
    await page.getByText(`Approved by ${bobName}`).waitFor();
    expect((await taskNow(task.uid)).resolved_by?.user_name).toBe(bobName);
    await checkPage(page, 'approval-link-conflict-phone');
    await context.close();
  });

  it('the agent revises the request while the page is open: Approve decides nothing, the page shows what changed and the new request', async () => {
    const task = await raise('Send a firmer reminder for INV-1042?');
    const link = await linkAbout(task.title);
    const context = await newContext(browser);
    const page = await open(context, link);
    await page.getByText('Second reminder: invoice INV-1042').waitFor();

    await bob.PATCH('/api/agents/{agent_uid}/approvals/{task_uid}', {
      params: { path: { agent_uid: agentUid, task_uid: task.uid } },
      body: { tool_args: { subject: 'Final reminder: invoice INV-1042' }, summary: 'Firmer subject' },
    });
    await page.getByRole('button', { name: 'Approve' }).click();
    await page
      .getByText(
        /This approval changed after you saw it: the agent Collections agent revised subject at .* UTC/,
      )
      .waitFor();
    await page.getByText('Final reminder: invoice INV-1042').waitFor();
    expect((await taskNow(task.uid)).resolution).toBeNull();

    // What is shown now is what the next click approves.
    await page.getByRole('button', { name: 'Approve' }).click();
    await until(async () => (await taskNow(task.uid)).resolution === 'approved', 'the approval');
    expect((await taskNow(task.uid)).tool_args).toMatchObject({
      subject: 'Final reminder: invoice INV-1042',
    });
    await context.close();
  });

  it('a broken link says it is not valid', async () => {
    const context = await newContext(browser);
    const page = await open(context, `${server.url}/approval?token=not.valid`);
    await page.getByText('This approval link is not valid').waitFor();
    await page.getByRole('link', { name: 'Open the Remit inbox' }).waitFor();
    await checkPage(page, 'approval-link-invalid');
    await context.close();
  });
});
