import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RemitClient } from '../../packages/client/src/index.ts';
import { fromLocalInput, tomorrowAt } from '../../web/src/collections.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import { until } from '../helpers/until.ts';
import {
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
 * The console's Collections pages in a real browser (docs/console.md#collections): the tabs over
 * `GET /api/email/drafts` with a search in the address bar; an email's page with the email rendered in
 * a sandboxed frame (hostile HTML that must do nothing), edited, scheduled and unscheduled, sent now with
 * the keyboard alone (the worker writes it to DATA_DIR/outbox), canceled after a confirmation, a 409
 * from a race shown in words; an invoice's Emails section; 375 px. axe-core, the CSP and a screenshot on
 * every page (harness.ts).
 */

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let page: Page;
let invoiceUid: string;
const emails: Record<string, string> = {};
/** Requests to /marker/… that went out: only the hostile email asks for them, and none may. */
const markers: string[] = [];

const TIME_ZONE = 'Europe/Berlin';
const HOUR = 3_600_000;
const rows = () => page.locator('table.data-table tbody tr');
/** Playwright's own patience for a list read after a navigation (expect.poll's default is 1 s). */
const SLOW = { timeout: 15_000 };
const check = (name: string, options: { fullPage?: boolean } = {}) => checkPage(page, name, options);
const noSidewaysScroll = () =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

const HOSTILE_HTML = `<!doctype html><html><head>
<meta http-equiv="refresh" content="0;url=/marker/refresh">
<link rel="stylesheet" href="/marker/style.css">
<script>document.body && (document.body.textContent = 'PWNED'); fetch('/marker/script');</script>
</head><body>
<p id="greeting">Hello from the hostile email.</p>
<img src="/marker/image.png" alt="" onerror="fetch('/marker/onerror')">
<form action="/marker/form" method="post"><button type="submit">Pay now</button></form>
<p><a href="/marker/link">Open your invoice</a> · <a href="/marker/top" target="_top">Leave</a></p>
<iframe src="/marker/frame" title="inner"></iframe>
<svg onload="fetch('/marker/svg')"></svg>
</body></html>`;

/** A local port nothing listens on: an SMTP server there refuses the connection (a `failed` email). */
async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const draftOf = async (uid: string) => api.GET('/api/email/drafts/{uid}', { params: { path: { uid } } });

describe('the console: collections email', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    // The failing account's SMTP server is on 127.0.0.1, which only this setting allows.
    process.env.ALLOW_PRIVATE_NETWORK_TARGETS = 'true';
    try {
      ({ database, server, browser, api } = await startConsoleRun('remit-e2e-collections-'));
    } finally {
      delete process.env.ALLOW_PRIVATE_NETWORK_TARGETS;
    }
    await setFirstPassword({ server, database });

    // No SMTP_URL and no smtp_url: this account's mail goes to DATA_DIR/outbox.
    const account = (
      await api.POST('/api/email/accounts', { body: { email: 'ar@acme.test', display_name: 'Acme AR' } })
    ).data.uid;
    const broken = (
      await api.POST('/api/email/accounts', {
        body: {
          email: 'billing@acme.test',
          display_name: 'Acme Billing',
          smtp_url: `smtp://127.0.0.1:${await closedPort()}`,
        },
      })
    ).data.uid;
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
    invoiceUid = (
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
      })
    ).data.uid;

    const save = async (body: Record<string, unknown>, from = account) =>
      (await api.POST('/api/email/drafts', { body: { from_account_id: from, ...body } })).uid;
    const about = { context_type: 'invoice', context_id: invoiceUid };
    emails.sent = await save({
      to: ['ap@globex.test'],
      subject: 'Thank you for your payment',
      body_text: 'We received your payment for AR-1001.',
      planned_send_at: new Date(Date.now() - HOUR).toISOString(),
    });
    emails.failed = await save(
      {
        to: ['ap@initech.test'],
        subject: 'Statement for Initech',
        body_text: 'Your statement is attached.',
        planned_send_at: new Date(Date.now() - HOUR).toISOString(),
      },
      broken,
    );
    emails.scheduled = await save({
      to: ['hank@globex.test'],
      subject: 'Second notice for AR-1042',
      body_text: 'A second reminder.',
      planned_send_at: new Date(Date.now() + 3 * 24 * HOUR).toISOString(),
      ...about,
    });
    emails.race = await save({ to: ['ap@globex.test'], subject: 'Quarterly statement', body_text: 'Hello.' });
    emails.cancel = await save({ to: ['ap@umbrella.test'], subject: 'Wrong amount', body_text: 'Oops.' });
    emails.hostile = await save({
      to: ['ap@globex.test'],
      subject: 'Hostile HTML',
      body_text: 'Hello from the hostile email.',
      body_html: HOSTILE_HTML,
    });
    emails.reminder = await save({
      to: ['ap@globex.test'],
      cc: ['hank@globex.test'],
      subject: 'Invoice AR-1042 is overdue',
      body_text:
        'Dear Hank,\n\nInvoice AR-1042 (€1,234.50) was due 40 days ago. Please pay it this week.\n\nAcme Collections',
      body_html:
        '<p>Dear Hank,</p><p>Invoice <strong>AR-1042</strong> (€1,234.50) was due 40 days ago. Please pay it this week.</p><p>Acme Collections</p>',
      ...about,
    });
    await until(async () => (await draftOf(emails.sent!)).status === 'sent', 'the sent email');
    await until(async () => (await draftOf(emails.failed!)).status === 'failed', 'the failed email');

    const context = await newContext(browser);
    // What left the browser for /marker/…: a request answered, or failed other than by the policy.
    // Chromium's preload scanner starts requests for the hostile email's image and stylesheet, which
    // the preview's Content-Security-Policy stops before they are sent (failure "csp").
    const isMarker = (url: string) => new URL(url).pathname.startsWith('/marker/');
    context.on('response', (response) => {
      if (isMarker(response.url())) markers.push(`${response.url()} answered ${response.status()}`);
    });
    context.on('requestfailed', (request) => {
      const reason = request.failure()?.errorText;
      if (isMarker(request.url()) && reason !== 'csp') markers.push(`${request.url()} failed: ${reason}`);
    });
    page = await context.newPage();
    await signIn(page, server.url);
  }, 180_000);

  afterAll(async () => {
    await stopConsoleRun({ browser, server, database });
  });

  it('tabs: drafts with a failed one, scheduled, sent, canceled (empty); a search in the address bar', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Collections' }).click();
    await page.waitForURL(`${server.url}/app/collections`);
    await page.getByRole('heading', { name: 'Collections' }).waitFor();
    await expect.poll(() => rows().count(), SLOW).toBe(5);
    const failedRow = rows().filter({ hasText: 'Statement for Initech' });
    expect(await failedRow.textContent()).toContain('Failed');
    expect(await failedRow.textContent()).toMatch(/ECONNREFUSED|refused/i);
    const reminderRow = rows().filter({ hasText: 'Invoice AR-1042 is overdue' });
    expect(await reminderRow.textContent()).toContain('ap@globex.test +1');
    await reminderRow.getByRole('link', { name: 'Invoice AR-1042', exact: true }).waitFor();
    await check('collections');

    await page.getByLabel('Search', { exact: true }).fill('GLOBEX');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/\/app\/collections\/drafts\?q=GLOBEX$/);
    await expect.poll(() => rows().count(), SLOW).toBe(3);
    await page.reload();
    await expect.poll(() => rows().count(), SLOW).toBe(3);
    expect(await page.getByLabel('Search', { exact: true }).inputValue()).toBe('GLOBEX');
    await page.getByRole('link', { name: 'Clear filters' }).click();
    await expect.poll(() => rows().count(), SLOW).toBe(5);

    await page.getByRole('link', { name: 'Scheduled', exact: true }).click();
    await page.waitForURL(`${server.url}/app/collections/scheduled`);
    await expect.poll(() => rows().count(), SLOW).toBe(1);
    expect(await rows().first().textContent()).toContain('Second notice for AR-1042');
    await check('collections-scheduled');

    await page.getByRole('link', { name: 'Sent', exact: true }).click();
    await expect.poll(() => rows().count(), SLOW).toBe(1);
    expect(await rows().first().textContent()).toContain('Thank you for your payment');

    await page.getByRole('link', { name: 'Canceled', exact: true }).click();
    await page.getByText('No canceled emails').waitFor();
    await check('collections-empty');
  });

  it('an email: header, the email in a sandboxed frame where hostile HTML does nothing', async () => {
    await page.goto(`${server.url}/app/collections/${emails.hostile}`);
    await page.getByRole('heading', { name: 'Hostile HTML', level: 1 }).waitFor();
    const frameElement = page.locator('iframe.email-preview');
    expect(await frameElement.getAttribute('sandbox')).toBe('');
    expect(await frameElement.getAttribute('title')).toBe('The email: Hostile HTML');
    const frame = page.frameLocator('iframe.email-preview');
    await frame.locator('#greeting').waitFor();
    // The script did not run (it would have replaced the body), the title is the page's own.
    expect(await frame.locator('body').textContent()).not.toContain('PWNED');
    expect(await page.title()).toBe('Hostile HTML · Remit');
    // A form cannot submit, links open nothing (not even in the frame), the page stays where it is.
    await frame.getByRole('button', { name: 'Pay now' }).click();
    await frame.getByRole('link', { name: 'Open your invoice' }).click();
    await frame.getByRole('link', { name: 'Leave' }).click();
    expect(page.url()).toBe(`${server.url}/app/collections/${emails.hostile}`);
    const preview = page
      .frames()
      .find((f) => f.parentFrame() === page.mainFrame() && f.url() === 'about:srcdoc');
    expect(preview, 'the preview frame is still its own document').toBeDefined();
    expect(await preview!.locator('#greeting').textContent()).toBe('Hello from the hostile email.');
    // A read after the clicks: had anything been sent, it would have been seen by now.
    await draftOf(emails.hostile!);
    expect(markers, 'requests the hostile email made').toEqual([]);
    expect(page.context().pages()).toHaveLength(1);
    await check('collections-hostile');
  });

  it('edit: the subject saved; the text changed without the HTML is pointed out', async () => {
    await page.goto(`${server.url}/app/collections/${emails.reminder}`);
    await page.getByRole('heading', { name: 'Invoice AR-1042 is overdue', level: 1 }).waitFor();
    const header = page.locator('header.panel');
    expect(await header.textContent()).toContain('hank@globex.test');
    await header.getByRole('link', { name: 'Invoice AR-1042' }).waitFor();
    await page.frameLocator('iframe.email-preview').getByText('was due 40 days ago').waitFor();
    await page.locator('pre.email-text', { hasText: 'Dear Hank,' }).waitFor();
    await check('collections-email', { fullPage: true });

    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    expect(await page.getByRole('button', { name: 'Save changes' }).isDisabled()).toBe(true);
    await page.getByLabel('Text version').fill('Dear Hank,\n\nPlease pay AR-1042 by Friday.');
    await page.getByText('You changed the text but not the HTML').waitFor();
    await page
      .getByLabel('Text version')
      .fill(
        'Dear Hank,\n\nInvoice AR-1042 (€1,234.50) was due 40 days ago. Please pay it this week.\n\nAcme Collections',
      );
    await page.getByLabel('Cc', { exact: true }).fill('hank@globex.test, not an address');
    await page.getByLabel('Subject').fill('Invoice AR-1042: 40 days overdue');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Not an email address: not an address').waitFor();
    await check('collections-edit', { fullPage: true });
    await page.getByLabel('Cc', { exact: true }).fill('hank@globex.test');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'Invoice AR-1042: 40 days overdue', level: 1 }).waitFor();
    await page.getByText('Saved.', { exact: true }).waitFor();
    const saved = await draftOf(emails.reminder!);
    expect(saved).toMatchObject({ subject: 'Invoice AR-1042: 40 days overdue', cc: ['hank@globex.test'] });
  });

  it('schedule for tomorrow 09:00 in the person’s time zone, then unschedule', async () => {
    const local = tomorrowAt(9, Date.now(), TIME_ZONE);
    // The field suggests it already; typed anyway, as a person would.
    await page.getByLabel('Send at').fill(local);
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    await page.getByText(/^Scheduled for /).waitFor();
    const scheduled = await draftOf(emails.reminder!);
    expect(scheduled.planned_send_at).toBe(fromLocalInput(local, TIME_ZONE));
    expect(scheduled.status).toBe('draft');
    expect(await page.locator('header.panel .status-pill').textContent()).toBe('Scheduled');
    expect(await page.getByLabel('Send at').inputValue()).toBe(local);

    await page.getByRole('button', { name: 'Unschedule' }).click();
    await page.getByText(/^Unscheduled\./).waitFor();
    expect((await draftOf(emails.reminder!)).planned_send_at).toBeNull();
    expect(await page.locator('header.panel .status-pill').textContent()).toBe('Draft');
  });

  it('send now with the keyboard alone: Sent, and the message is in the outbox', async () => {
    await page.goto(`${server.url}/app/collections/${emails.reminder}`);
    await page.getByRole('heading', { name: 'Invoice AR-1042: 40 days overdue', level: 1 }).waitFor();
    await page.locator('body').focus();
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.textContent === 'Send now');
    }
    expect(reached, 'Tab reaches "Send now"').toBe(true);
    await page.keyboard.press('Enter');
    await page.getByText(/^Sent /).waitFor();
    expect(await page.locator('header.panel .status-pill').textContent()).toBe('Sent');
    // The outcome is where the focus is, and the actions are gone.
    expect(await page.evaluate(() => document.activeElement?.classList.contains('send-state'))).toBe(true);
    expect(await page.getByRole('button', { name: 'Send now' }).count()).toBe(0);
    const sent = await draftOf(emails.reminder!);
    expect(sent.status).toBe('sent');
    const file = path.join(database.dataDir, 'outbox', `${emails.reminder}@acme.test.eml`);
    expect(fs.existsSync(file), file).toBe(true);
    expect(fs.readFileSync(file, 'utf8')).toContain('Subject: Invoice AR-1042: 40 days overdue');
    await check('collections-email-sent');
  });

  it('cancel after a confirmation (Esc keeps it); a race answered 409 shows the new state', async () => {
    await page.goto(`${server.url}/app/collections/${emails.cancel}`);
    await page.getByRole('heading', { name: 'Wrong amount', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Cancel email' }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel this email?' });
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Keep the email');
    await check('collections-cancel');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel email');
    expect((await draftOf(emails.cancel!)).status).toBe('draft');
    await page.getByRole('button', { name: 'Cancel email' }).click();
    await dialog.getByRole('button', { name: 'Yes, cancel it' }).click();
    await page.getByText('Canceled. The email will not be sent.').waitFor();
    expect(await page.locator('header.panel .status-pill').textContent()).toBe('Canceled');
    expect((await draftOf(emails.cancel!)).status).toBe('canceled');

    // Someone else cancels while this page still offers to send it.
    await page.goto(`${server.url}/app/collections/${emails.race}`);
    await page.getByRole('heading', { name: 'Quarterly statement', level: 1 }).waitFor();
    await api.DELETE('/api/email/drafts/{uid}', { params: { path: { uid: emails.race! } } });
    await page.getByRole('button', { name: 'Send now' }).click();
    await page
      .getByText(/^Not done: A canceled email cannot be changed\. The email is now canceled\./)
      .waitFor();
    expect(await page.locator('header.panel .status-pill').textContent()).toBe('Canceled');
  });

  it("an invoice's page lists its emails, linking to them", async () => {
    await page.goto(`${server.url}/app/invoices/${invoiceUid}`);
    const section = page.getByRole('region', { name: 'Emails' });
    await section.getByRole('link', { name: 'Invoice AR-1042: 40 days overdue' }).waitFor();
    await section.getByRole('link', { name: 'Second notice for AR-1042' }).click();
    await page.waitForURL(`${server.url}/app/collections/${emails.scheduled}`);
    await page.getByRole('heading', { name: 'Second notice for AR-1042', level: 1 }).waitFor();
  });

  it('at 375 px: the list and an email fit the width', async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${server.url}/app/collections`);
    // What is left of the drafts: the hostile one and the failed one.
    await expect.poll(() => rows().count(), SLOW).toBe(2);
    expect(await noSidewaysScroll()).toBe(true);
    await check('collections-phone');
    await page.goto(`${server.url}/app/collections/${emails.failed}`);
    await page.getByRole('heading', { name: 'Statement for Initech', level: 1 }).waitFor();
    await page.getByText('Sending failed:', { exact: false }).first().waitFor();
    expect(await noSidewaysScroll()).toBe(true);
    await check('collections-email-phone', { fullPage: true });
    await page.setViewportSize(DESKTOP);
    expect(markers, 'requests the hostile email made').toEqual([]);
  });
});
