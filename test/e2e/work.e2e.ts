import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RemitClient } from '../../packages/client/src/index.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import {
  checkPage,
  daysAgo,
  DESKTOP,
  PHONE,
  startConsoleRun,
  setFirstPassword,
  signIn,
  stopConsoleRun,
  newContext,
} from './harness.ts';

/**
 * The console's work pages in a real browser (docs/console.md): invoice lists with filters, sorting and
 * pages in the address bar, an invoice's page (payments, comments), the task list and a task edited.
 * The shared harness (harness.ts): a Remit process on the embedded database, Debian's Chromium,
 * axe-core and the CSP checked on every page, a screenshot of each.
 */

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let page: Page;
let adaUid: string;
const invoices: Record<string, string> = {};
const tasks: Record<string, string> = {};

const check = (name: string, options: { fullPage?: boolean } = {}) => checkPage(page, name, options);

const noSidewaysScroll = () =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

const rows = () => page.locator('table.data-table tbody tr');

describe('the console: invoices and tasks', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    ({ database, server, browser, api, adaUid } = await startConsoleRun('remit-e2e-work-'));

    await setFirstPassword({ server, database });

    const globex = await api.POST('/api/parties', {
      body: {
        name: 'Globex Corporation',
        role: 'client',
        billing_contact: { name: 'Hank Scorpio', email: 'ap@globex.test' },
      },
    });
    const initech = await api.POST('/api/parties', { body: { name: 'Initech', role: 'client' } });
    await api.POST('/api/products', {
      body: {
        sku: 'CONSULT',
        name: 'Consulting day',
        context_type: 'PRODUCT',
        unit_price: 41_150,
        currency: 'EUR',
      },
    });
    const receivable = async (
      number: string,
      client: string,
      quantity: number,
      due: number,
      status = 'open',
    ) =>
      (
        await api.POST('/api/invoices', {
          body: {
            invoice_type: 'ACCOUNTS_RECEIVABLE',
            invoice_number: number,
            status: status as 'open',
            currency: 'EUR',
            issue_date: daysAgo(due + 30),
            due_date: daysAgo(due),
            client_party_uid: client,
            line_items: [{ context_type: 'PRODUCT', sku: 'CONSULT', quantity }],
          },
        })
      ).data.uid;
    invoices['AR-1042'] = await receivable('AR-1042', globex.data.uid, 3, 40);
    invoices['AR-1043'] = await receivable('AR-1043', initech.data.uid, 1, 5);
    invoices['AR-1044'] = await receivable('AR-1044', globex.data.uid, 5, -20);
    // 27 more, so the list has a second page (25 a page).
    for (let i = 0; i < 27; i++)
      await receivable(`AR-2${String(i).padStart(3, '0')}`, initech.data.uid, 1, 60 + i);
    await api.POST('/api/invoices/{uid}/payments', {
      params: { path: { uid: invoices['AR-1042'] } },
      body: { amount_cents: 50_000, paid_at: daysAgo(10) },
    });
    await api.POST('/api/invoices/{uid}/comments', {
      params: { path: { uid: invoices['AR-1042'] } },
      body: { text: 'Hank says the payment run is on Friday.' },
    });
    const paper = await api.POST('/api/parties', { body: { name: 'Paper Supplies Ltd', role: 'vendor' } });
    await api.POST('/api/invoices', {
      body: {
        invoice_type: 'ACCOUNTS_PAYABLE',
        invoice_number: 'AP-77',
        status: 'received',
        currency: 'EUR',
        issue_date: daysAgo(12),
        due_date: daysAgo(-18),
        service_provider_party_uid: paper.data.uid,
        line_items: [{ context_type: 'PRODUCT', sku: 'CONSULT', quantity: 1 }],
      },
    });

    const task = async (title: string, priority: 'high' | 'low', extra: Record<string, unknown> = {}) =>
      (await api.POST('/api/work-tasks', { body: { title, priority, ...extra } })).data.uid;
    tasks.call = await task('Call Globex about AR-1042', 'high', {
      description: 'They promised a payment run on Friday; confirm the amount.',
      context_entities: [{ entity_type: 'invoice', entity_uid: invoices['AR-1042'] }],
    });
    tasks.file = await task('File the AP-77 receipt', 'low');
    const agent = await api.POST('/api/agents', {
      body: {
        name: 'Collector',
        agent_type: 'collections',
        status: 'active',
        triggers: [{ type: 'manual' }],
      },
    });
    tasks.approval = (
      await api.POST('/api/agents/{agent_uid}/approvals', {
        params: { path: { agent_uid: agent.data.uid } },
        body: {
          title: 'Send a reminder for AR-1043',
          reasoning: 'Five days overdue.',
          tool_args: {
            type: 'send_email',
            subject: 'AR-1043',
            body: 'Hello',
            recipients: ['ap@initech.test'],
          },
          trigger: { type: 'manual' },
          priority: 'low',
        },
      })
    ).data.uid;

    const context = await newContext(browser);
    page = await context.newPage();
    await signIn(page, server.url);
  }, 180_000);

  afterAll(() => stopConsoleRun({ browser, server, database }));

  it('receivables: newest first, pages, a filter kept in the address bar through a reload, sorting', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Invoices' }).click();
    await page.waitForURL(`${server.url}/app/invoices`);
    await page.getByRole('heading', { name: 'Invoices' }).waitFor();
    await expect.poll(() => rows().count()).toBe(25);
    await page.getByText('Page 1 of 2 · 30 invoices').waitFor();
    // The newest issue date first: AR-1044 (due in 20 days).
    expect(await rows().first().locator('td').first().textContent()).toBe('AR-1044');
    await check('invoices');

    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/page=2$/);
    await expect.poll(() => rows().count()).toBe(5);

    await page.getByLabel('Client').selectOption({ label: 'Globex Corporation' });
    await page.getByLabel('Search').fill('1042');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/keyword=1042/);
    expect(new URL(page.url()).searchParams.get('page')).toBeNull();
    await expect.poll(() => rows().count()).toBe(1);
    const row = rows().first();
    expect(await row.locator('td').nth(1).textContent()).toBe('Globex Corporation');
    // 3 × €411.50 = €1,234.50 due, €500.00 paid: €734.50 left; 40 days overdue.
    expect(await row.textContent()).toContain('€1,234.50');
    expect(await row.textContent()).toContain('€734.50 left');
    expect(await row.textContent()).toContain('40 days');

    await page.reload();
    await expect.poll(() => rows().count()).toBe(1);
    expect(await page.getByLabel('Search').inputValue()).toBe('1042');

    await page.getByRole('link', { name: 'Clear filters' }).click();
    await page.waitForURL(`${server.url}/app/invoices/receivable`);
    await expect.poll(() => rows().count()).toBe(25);
    await page.getByRole('button', { name: /^Amount due/ }).click();
    // Descending is the default order, so the address names only the column.
    await page.waitForURL(/\?sort_by=amount_due$/);
    expect(await page.locator('th[aria-sort="descending"]').textContent()).toContain('Amount due');
    await expect.poll(() => rows().first().locator('td').first().textContent()).toBe('AR-1044');
    await page.getByRole('button', { name: /^Amount due/ }).click();
    await page.waitForURL(/sort_order=asc/);
    await expect.poll(() => page.locator('th[aria-sort="ascending"]').count()).toBe(1);

    await page.getByLabel('Status').selectOption('paid');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No invoice matches these filters').waitFor();
    await check('invoices-empty');
  });

  it('payables in their own tab', async () => {
    await page.getByRole('link', { name: 'Payable', exact: true }).click();
    await page.waitForURL(`${server.url}/app/invoices/payable`);
    await expect.poll(() => rows().count()).toBe(1);
    expect(await rows().first().textContent()).toContain('Paper Supplies Ltd');
    expect(await page.getByLabel('Status').locator('option').allTextContents()).toContain('In review');
    await check('invoices-payable');
  });

  it("an invoice's page: amounts, lines, payments, comments (one added), sync state", async () => {
    await page.goto(`${server.url}/app/invoices/receivable?keyword=1042`);
    await page.getByRole('link', { name: 'AR-1042' }).click();
    await page.getByRole('heading', { name: 'Invoice AR-1042' }).waitFor();
    expect(await page.title()).toBe('Invoice AR-1042 · Remit');
    const facts = page.locator('header.panel');
    expect(await facts.textContent()).toContain('€734.50');
    expect(await facts.textContent()).toContain('Days overdue40');
    expect(await facts.textContent()).toContain('Globex Corporation');
    expect(await page.locator('section[aria-labelledby="lines-heading"]').textContent()).toContain(
      'Consulting day',
    );
    await page.getByText('€500.00 paid').waitFor();
    await page.getByText('Hank says the payment run is on Friday.').waitFor();
    await page.getByText('No attachments.').waitFor();
    await page.getByText('Not synced with a billing partner.').waitFor();

    await page.getByRole('button', { name: 'Add comment' }).click();
    await page.getByText('Write a comment first.').waitFor();
    await page.getByLabel('Add a comment').fill('Called Hank: €734.50 on Friday.');
    await page.getByRole('button', { name: 'Add comment' }).click();
    await page.locator('p.comment-text', { hasText: 'Called Hank: €734.50 on Friday.' }).waitFor();
    expect(await page.getByLabel('Add a comment').inputValue()).toBe('');
    const { data } = await api.GET('/api/invoices/{uid}', {
      params: { path: { uid: invoices['AR-1042']! } },
    });
    expect(data.comments?.map((c) => c.text)).toContain('Called Hank: €734.50 on Friday.');
    await check('invoice', { fullPage: true });
  });

  it('tasks: filters in the address bar, a task edited, its change log; an approval links to the inbox', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    await page.waitForURL(`${server.url}/app/tasks`);
    await expect.poll(() => rows().count()).toBe(3);
    await check('tasks');

    await page.getByLabel('Priority').selectOption('high');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/priority=high/);
    await expect.poll(() => rows().count()).toBe(1);
    await page.getByLabel('Type').selectOption('hil_approval');
    await page.getByLabel('Priority').selectOption('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/type=hil_approval/);
    await expect.poll(() => rows().count()).toBe(1);
    await page.getByRole('link', { name: 'Send a reminder for AR-1043' }).click();
    await page.getByRole('link', { name: 'Decide in the approvals inbox' }).click();
    await page.waitForURL(`${server.url}/app/inbox/${tasks.approval}`);

    await page.goto(`${server.url}/app/tasks?q=Globex`);
    await expect.poll(() => rows().count()).toBe(1);
    await page.getByRole('link', { name: 'Call Globex about AR-1042' }).click();
    await page.getByRole('heading', { name: 'Call Globex about AR-1042' }).waitFor();
    await page.getByRole('link', { name: 'Invoice AR-1042' }).waitFor();
    expect(await page.getByRole('button', { name: 'Save changes' }).isDisabled()).toBe(true);

    await page.getByLabel('Title').fill('Call Globex about AR-1042 on Friday');
    await page.getByLabel('Status').selectOption('in_progress');
    await page.getByLabel('Priority', { exact: true }).selectOption('urgent');
    await page.getByLabel('Assignee').selectOption(adaUid);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'Call Globex about AR-1042 on Friday' }).waitFor();
    await page.getByText('Saved “Call Globex about AR-1042 on Friday”.').waitFor();
    const log = page.getByRole('region', { name: 'Change log' });
    await expect.poll(() => log.textContent()).toContain('changed the status');
    expect(await log.textContent()).toContain('Todo → In progress');
    expect(await log.textContent()).toContain('— → Ada Lovelace');
    const { data } = await api.GET('/api/work-tasks/{task_uid}', {
      params: { path: { task_uid: tasks.call! } },
    });
    expect(data).toMatchObject({
      title: 'Call Globex about AR-1042 on Friday',
      status: 'in_progress',
      priority: 'urgent',
      assign_to: { type: 'user', user_uid: adaUid },
    });
    await check('task', { fullPage: true });
  });

  it('at 375 px: the lists and an invoice fit the width', async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${server.url}/app/invoices`);
    await expect.poll(() => rows().count()).toBe(25);
    expect(await noSidewaysScroll()).toBe(true);
    await check('invoices-phone');
    await page.goto(`${server.url}/app/invoices/${invoices['AR-1042']}`);
    await page.getByRole('heading', { name: 'Invoice AR-1042' }).waitFor();
    expect(await noSidewaysScroll()).toBe(true);
    await page.goto(`${server.url}/app/tasks`);
    await expect.poll(() => rows().count()).toBe(3);
    expect(await noSidewaysScroll()).toBe(true);
    await page.setViewportSize(DESKTOP);
  });
});
