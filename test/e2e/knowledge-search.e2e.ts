import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RemitClient } from '../../packages/client/src/index.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { sampleFile } from '../helpers/sample-files.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import {
  checkPage,
  daysAgo,
  DESKTOP,
  newContext as newBrowserContext,
  PHONE,
  setFirstPassword,
  signIn,
  startConsoleRun,
  stopConsoleRun,
} from './harness.ts';

/**
 * The console's Knowledge page and its search palette in a real browser (docs/console.md), against a Remit
 * process on the embedded database started here, as test/e2e/console.e2e.ts does for the inbox. Every page is checked
 * with axe-core and for Content-Security-Policy violations, and photographed into docs/console/.
 */

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let organizationUid: string;
let context: BrowserContext;
let page: Page;
let invoiceUid: string;
let approvalUid: string;

const newContext = (viewport = DESKTOP) => newBrowserContext(browser, viewport);

async function noSidewaysScroll(target: Page) {
  expect(
    await target.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
    'nothing scrolls sideways',
  ).toBe(true);
}

describe('the console: knowledge and search', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    ({ database, server, browser, api, organizationUid } = await startConsoleRun('remit-e2e-knowledge-'));

    // What search finds: a client's overdue invoice and an agent's approval about it.
    const client = await api.POST('/api/parties', {
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
        unit_price: 61_725,
        currency: 'EUR',
      },
    });
    const invoice = await api.POST('/api/invoices', {
      body: {
        invoice_type: 'ACCOUNTS_RECEIVABLE',
        invoice_number: 'AR-2001',
        status: 'open',
        currency: 'EUR',
        issue_date: daysAgo(75),
        due_date: daysAgo(45),
        client_party_uid: client.data.uid,
        line_items: [{ context_type: 'PRODUCT', sku: 'CONSULT', quantity: 2 }],
      },
    });
    invoiceUid = invoice.data.uid;
    const agent = await api.POST('/api/agents', {
      body: {
        name: 'Collector',
        agent_type: 'collections',
        status: 'active',
        triggers: [{ type: 'manual' }],
      },
    });
    const approval = await api.POST('/api/agents/{agent_uid}/approvals', {
      params: { path: { agent_uid: agent.data.uid } },
      body: {
        title: 'Remind Globex about AR-2001',
        reasoning: 'AR-2001 is 45 days overdue.',
        tool_args: {
          type: 'send_email',
          subject: 'AR-2001 is overdue',
          body: 'Hello',
          invoice_uid: invoiceUid,
        },
        trigger: { type: 'schedule' },
        context_entities: [{ entity_type: 'invoice', entity_uid: invoiceUid }],
      },
    });
    approvalUid = approval.data.uid;

    await setFirstPassword({ server, database });

    context = await newContext();
    page = await context.newPage();
    await signIn(page, server.url);
  }, 120_000);

  afterAll(() => stopConsoleRun({ browser, server, database }));

  it('Knowledge: empty, then upload a document straight to storage and see it processed', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Knowledge' }).click();
    await page.waitForURL(`${server.url}/app/knowledge`);
    await page.getByRole('heading', { name: 'Knowledge', level: 1 }).waitFor();
    await page.getByText('No knowledge documents yet').waitFor();
    await expect.poll(() => page.title()).toBe('Knowledge · Remit');
    await checkPage(page, 'knowledge-empty');

    // A file the API would refuse is refused before anything is sent.
    await page.getByLabel('Files').setInputFiles({
      name: 'notes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('plain text'),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page
      .getByRole('alert')
      .getByText(/notes\.txt is not a PDF/)
      .waitFor();

    // The upload goes to the presigned form's URL (object storage), not through the API.
    const storagePosts: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname.startsWith('/storage/')) {
        storagePosts.push(request.url());
      }
    });
    await page.getByLabel('Files').setInputFiles({
      name: 'Late fee policy.pdf',
      mimeType: 'application/pdf',
      buffer: sampleFile('pdf', 'Late fee policy: two percent monthly'),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByText('Uploaded; processing started').waitFor();
    await expect
      .poll(() => page.getByRole('progressbar', { name: 'Late fee policy.pdf' }).getAttribute('value'))
      .toBe('100');
    expect(storagePosts).toEqual([`${server.url}/storage/remit`]);
    const row = page.getByRole('row', { name: /Late fee policy\.pdf/ });
    await row.getByText('Ready').waitFor();
    await expect.poll(() => row.textContent()).toMatch(/PDF/);

    const listed = await api.GET('/api/knowledge', {
      params: { query: { organization_uid: organizationUid } },
    });
    expect(listed.data.items.map((d) => [d.filename, d.status])).toEqual([['Late fee policy.pdf', 'ready']]);
  });

  it('Knowledge: a file that cannot be read ends failed, with the reason', async () => {
    await page.getByLabel('Files').setInputFiles({
      name: 'Broken contract.pdf',
      mimeType: 'application/pdf',
      buffer: Buffer.from('%PDF-1.7\nthis is not really a PDF\n'),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    const row = page.getByRole('row', { name: /Broken contract\.pdf/ });
    await row.getByText('Failed').waitFor();
    await row.getByText(/could not be read/).waitFor();
    await checkPage(page, 'knowledge');
  });

  it('Knowledge at 375 px', async () => {
    const phone = await newContext(PHONE);
    await phone.addCookies(await context.cookies());
    const small = await phone.newPage();
    await small.goto(`${server.url}/app/knowledge`);
    await small.getByRole('row', { name: /Late fee policy\.pdf/ }).waitFor();
    await noSidewaysScroll(small);
    await checkPage(small, 'knowledge-phone');
    await phone.close();
  });

  it('search: Ctrl-K opens a labelled dialog; type, arrows, Enter opens the result; Esc closes and focus returns', async () => {
    await page.goto(`${server.url}/app/inbox`);
    await page.getByText('Remind Globex about AR-2001').first().waitFor();
    const button = page.getByRole('button', { name: /^Search/ });
    await button.focus();
    await page.keyboard.press('Control+k');
    const dialog = page.getByRole('dialog', { name: 'Search' });
    await dialog.waitFor();
    const box = dialog.getByRole('combobox', { name: 'Search invoices, tasks and knowledge' });
    await expect.poll(() => box.evaluate((el) => el === document.activeElement)).toBe(true);
    // Recent items before anything is typed.
    await dialog.getByText('Recent').waitFor();

    await page.keyboard.type('Globex');
    await dialog.getByText('Results', { exact: true }).waitFor();
    const options = dialog.getByRole('option');
    await expect
      .poll(async () => (await options.allTextContents()).join(' | '))
      .toMatch(/AR-2001.*Remind Globex|Remind Globex.*AR-2001/);
    await checkPage(page, 'search');
    // Tab stays in the dialog (the page behind it is inert).
    for (const expected of ['Close', 'Search invoices, tasks and knowledge', 'Close']) {
      await page.keyboard.press('Tab');
      expect(
        await page.evaluate(
          () =>
            document.activeElement?.closest('dialog') &&
            (document.activeElement.getAttribute('aria-label') ?? document.activeElement.textContent),
        ),
      ).toBe(expected);
    }
    await box.focus();

    // Arrows move the active option; Enter on the pending approval opens it in the inbox.
    const labels = await dialog.locator('.search-label').allTextContents();
    const approvalIndex = labels.indexOf('Remind Globex about AR-2001');
    for (let i = 0; i < approvalIndex; i++) await page.keyboard.press('ArrowDown');
    expect(await box.getAttribute('aria-activedescendant')).toBe(
      await options.nth(approvalIndex).getAttribute('id'),
    );
    await page.keyboard.press('Enter');
    await page.waitForURL(`${server.url}/app/inbox/${approvalUid}`);
    expect(await dialog.isVisible()).toBe(false);

    // The invoice opens its page; Esc closes without going anywhere, focus back on the button.
    await page.keyboard.press('Control+k');
    await page.keyboard.type('AR-2001');
    await dialog.locator('.search-result', { hasText: 'Invoice' }).waitFor();
    await page.keyboard.press('Escape');
    expect(await dialog.isVisible()).toBe(false);
    await button.click();
    await page.keyboard.type('AR-2001');
    await dialog.locator('.search-result', { hasText: 'Invoice' }).click();
    await page.waitForURL(`${server.url}/app/invoices/${invoiceUid}`);
    await page.keyboard.press('Control+k');
    await page.keyboard.press('Escape');
    await expect.poll(() => button.evaluate((el) => el === document.activeElement)).toBe(true);

    // Nothing found says so.
    await page.keyboard.press('Control+k');
    await page.keyboard.type('zzzz-nothing');
    await dialog.getByText('Nothing matches “zzzz-nothing”.').waitFor();
    await page.keyboard.press('Escape');
  });
});
