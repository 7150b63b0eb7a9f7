import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RemitClient } from '../../packages/client/src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import {
  ADA,
  checkPage,
  daysAgo,
  DESKTOP,
  newContext,
  PHONE,
  setFirstPassword,
  signIn,
  startConsoleRun,
  stopConsoleRun,
} from './harness.ts';

/**
 * An invoice's status in the console (docs/console.md#invoices, docs/invoices.md#lifecycle and
 * #approval-limits): the organization's members may approve up to 5,000.00; a payable of 7,500.00 for
 * which Grace (a member) is responsible. Grace's Approve is refused in the API's words and the status
 * stays; Ada (admin, no limit) approves it with a note, and the history names her with the note. The
 * buttons are the API's `allowed_next_statuses`: no "Mark paid" before approval.
 */

const GRACE = { name: 'Grace Hopper', email: 'grace@acme.test', password: 'compile the nanoseconds' };

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let invoiceUid: string;
let grace: Page;
let ada: Page;

const statusPanel = (page: Page) => page.getByRole('region', { name: 'Status' });
const moveButtons = (page: Page) =>
  statusPanel(page).getByRole('group', { name: 'Change the status' }).getByRole('button');

async function statusOf(uid: string) {
  return (await api.GET('/api/invoices/{uid}', { params: { path: { uid } } })).data.status;
}

describe("an invoice's status in the console", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    let organizationUid: string;
    ({ database, server, browser, api, organizationUid } = await startConsoleRun('remit-e2e-status-'));
    const created = await runCli(
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
    expect(created.code, created.stderr).toBe(0);
    const graceUid = (JSON.parse(created.stdout.trim()) as { user_uid: string }).user_uid;
    await setFirstPassword({ server, database });
    await setFirstPassword({ server, database }, GRACE);

    await api.PATCH('/api/organization/{organization_uid}/settings', {
      params: { path: { organization_uid: organizationUid } },
      body: { approval_limits: { roles: { member: 500_000 } } },
    });
    await api.POST('/api/products', {
      body: {
        sku: 'AUDIT',
        name: 'Audit day',
        context_type: 'PRODUCT',
        unit_price: 250_000,
        currency: 'EUR',
      },
    });
    const vendor = await api.POST('/api/parties', { body: { name: 'Stark Auditing', role: 'vendor' } });
    invoiceUid = (
      await api.POST('/api/invoices', {
        body: {
          invoice_type: 'ACCOUNTS_PAYABLE',
          invoice_number: 'AP-2048',
          status: 'received',
          currency: 'EUR',
          issue_date: daysAgo(5),
          due_date: daysAgo(-25),
          service_provider_party_uid: vendor.data.uid,
          responsible_user_uid: graceUid,
          assignee_user_uids: [graceUid],
          line_items: [{ context_type: 'PRODUCT', sku: 'AUDIT', quantity: 3 }],
        },
      })
    ).data.uid;

    [grace, ada] = await Promise.all([
      newContext(browser, DESKTOP).then((c) => c.newPage()),
      newContext(browser, DESKTOP).then((c) => c.newPage()),
    ]);
    await signIn(grace, server.url, GRACE);
    await signIn(ada, server.url, ADA);
  });

  afterAll(async () => {
    await stopConsoleRun({ browser, server, database });
  });

  it("a member's Approve over her role's limit is refused in the API's words; the status stays", async () => {
    await grace.goto(`${server.url}/app/invoices/${invoiceUid}`);
    const panel = statusPanel(grace);
    await panel.getByText('Received', { exact: true }).first().waitFor();
    // The lifecycle's moves from received, and not Mark paid: a payable is paid only once approved.
    await moveButtons(grace).last().waitFor();
    await expect(moveButtons(grace).allInnerTexts()).resolves.toEqual([
      'Start review',
      'Approve',
      'Reject',
      'Void',
    ]);
    await panel.getByRole('button', { name: 'Approve', exact: true }).click();
    const alert = panel.getByRole('alert');
    await alert.getByText('The status was not changed.').waitFor();
    await alert
      .getByText("The invoice's total, 7500.00 EUR, is over the member role's approval limit of 5000.00")
      .waitFor();
    expect(await statusOf(invoiceUid)).toBe('received');
    // The history has the creation only.
    await expect(panel.getByRole('list', { name: 'History' }).getByRole('listitem').count()).resolves.toBe(1);
    await checkPage(grace, 'invoice-status-limit', { fullPage: true });
  });

  it('Reject asks first; kept, nothing changes', async () => {
    const panel = statusPanel(grace);
    await panel.getByRole('button', { name: 'Reject', exact: true }).click();
    const dialog = grace.getByRole('dialog', { name: 'Reject this invoice?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Keep it received' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await statusOf(invoiceUid)).toBe('received');
  });

  it('an admin approves it with a note: approved, the history names her with the note', async () => {
    await ada.goto(`${server.url}/app/invoices/${invoiceUid}`);
    const panel = statusPanel(ada);
    await moveButtons(ada).first().waitFor();
    await expect(panel.getByRole('button', { name: 'Mark paid' }).count()).resolves.toBe(0);
    await panel.getByLabel('Note (optional)').fill('Checked against the audit contract');
    await panel.getByRole('button', { name: 'Approve', exact: true }).click();
    await panel.getByRole('status').getByText('Status changed to Approved.').waitFor();
    // The buttons once the history is read again with the new status.
    await panel.getByRole('button', { name: 'Mark registered' }).waitFor();
    await expect(moveButtons(ada).allInnerTexts()).resolves.toEqual([
      'Mark registered',
      'Schedule',
      'Mark paid',
      'Void',
    ]);
    const last = panel.getByRole('list', { name: 'History' }).getByRole('listitem').last();
    await last.getByText(ADA.name).waitFor();
    await last.getByText('Received → Approved').waitFor();
    await last.getByText('“Checked against the audit contract”').waitFor();
    expect(await statusOf(invoiceUid)).toBe('approved');
    const history = await api.GET('/api/invoices/{uid}/status-history', {
      params: { path: { uid: invoiceUid } },
    });
    expect(history.data.items.at(-1)).toMatchObject({
      from_status: 'received',
      to_status: 'approved',
      note: 'Checked against the audit contract',
      actor: { name: ADA.name },
    });
    await checkPage(ada, 'invoice-status', { fullPage: true });

    await ada.setViewportSize(PHONE);
    await moveButtons(ada).first().waitFor();
    const sideways = await ada.evaluate(
      () => document.documentElement.scrollWidth > document.documentElement.clientWidth,
    );
    expect(sideways).toBe(false);
    await checkPage(ada, 'invoice-status-phone', { fullPage: true });
    await ada.setViewportSize(DESKTOP);
  });
});
