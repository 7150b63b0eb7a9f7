import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RemitClient } from '../../packages/client/src/index.ts';
import { formatDate, formatMoney } from '../../web/src/format.ts';
import { runCli } from '../helpers/cli.ts';
import { type ServerProcess } from '../helpers/processes.ts';
import { type ProcessDatabase } from '../helpers/test-database.ts';
import {
  checkPage,
  daysAgo,
  newContext,
  PHONE,
  startConsoleRun,
  setFirstPassword,
  signIn,
  stopConsoleRun,
} from './harness.ts';

/**
 * The console's Receivables metrics page in a real browser (docs/console.md#metrics): the empty state
 * before any value exists, then the preset values computed by `remit metrics compute` (run beside the
 * server, over its admin socket) and shown as the API serves them; axe-core and the CSP on each state,
 * a screenshot of each, 375 px without sideways scrolling.
 */

let database: ProcessDatabase;
let server: ServerProcess;
let browser: Browser;
let api: RemitClient;
let organizationUid: string;
let page: Page;

const BUCKETS = [
  'aging_current_cents',
  'aging_1_30_cents',
  'aging_31_60_cents',
  'aging_61_90_cents',
  'aging_over_90_cents',
] as const;

async function latest(metric: string): Promise<number> {
  const { data } = await api.GET('/api/metrics/{metric_uid}/values', {
    params: {
      path: { metric_uid: metric },
      query: { entity_uid: organizationUid, time_unit: 'day', from: daysAgo(0), to: daysAgo(0) },
    },
  });
  expect(data.items, metric).toHaveLength(1);
  return data.items[0]!.value;
}

describe('the console: receivables metrics', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    ({ database, server, browser, api, organizationUid } = await startConsoleRun('remit-e2e-metrics-'));

    await setFirstPassword({ server, database });

    const globex = await api.POST('/api/parties', { body: { name: 'Globex Corporation', role: 'client' } });
    await api.POST('/api/products', {
      body: {
        sku: 'CONSULT',
        name: 'Consulting day',
        context_type: 'PRODUCT',
        unit_price: 100_000,
        currency: 'EUR',
      },
    });
    // One invoice per bucket but 61–90: not yet due, 10, 45 (part paid) and 100 days past due.
    const receivable = async (number: string, quantity: number, due: number) =>
      (
        await api.POST('/api/invoices', {
          body: {
            invoice_type: 'ACCOUNTS_RECEIVABLE',
            invoice_number: number,
            status: 'open',
            currency: 'EUR',
            issue_date: daysAgo(due + 30),
            due_date: daysAgo(due),
            client_party_uid: globex.data.uid,
            line_items: [{ context_type: 'PRODUCT', sku: 'CONSULT', quantity }],
          },
        })
      ).data.uid;
    await receivable('AR-1', 1, -20);
    await receivable('AR-2', 2, 10);
    const partPaid = await receivable('AR-3', 1, 45);
    await receivable('AR-4', 3, 100);
    await api.POST('/api/invoices/{uid}/payments', {
      params: { path: { uid: partPaid } },
      body: { amount_cents: 25_000, paid_at: daysAgo(5) },
    });

    const context = await newContext(browser);
    page = await context.newPage();
    await signIn(page, server.url);
  }, 180_000);

  afterAll(() => stopConsoleRun({ browser, server, database }));

  it('the first visit: nothing was computed yet, and the figures are there (computed when first read)', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Metrics' }).click();
    await page.waitForURL(`${server.url}/app/metrics`);
    await page.getByTestId('metric-overdue-amount').waitFor();
    expect(await page.getByTestId('metric-overdue-amount').textContent()).toBe(
      formatMoney(575_000, 'EUR', 'en-US'),
    );
    expect(await page.getByText('No metric values yet.').count()).toBe(0);
    expect(await page.title()).toBe('Metrics · Remit');
  });

  it('after `remit metrics compute`: the figures and the aging table are the API values', async () => {
    // Beside the running server: the CLI finds DATA_DIR held and runs the command over the admin socket.
    const computed = await runCli(['metrics', 'compute', '--org', organizationUid, '--json'], database.env);
    expect(computed.code, computed.stderr).toBe(0);
    expect(JSON.parse(computed.stdout.trim())).toMatchObject({ metric_date: daysAgo(0) });

    const overdue = await latest('overdue_amount_cents');
    const buckets = await Promise.all(BUCKETS.map(latest));
    // The book above: 2 × 1,000 + 750 + 3 × 1,000 overdue, 1,000 not yet due.
    expect(overdue).toBe(575_000);
    expect(buckets).toEqual([100_000, 200_000, 75_000, 0, 300_000]);
    const dso = await latest('dso_countback');
    const count = await latest('overdue_invoice_count');

    await page.reload();
    await page.getByTestId('metric-overdue-amount').waitFor();
    expect(await page.getByText(/^As of the end of/).textContent()).toContain(
      formatDate(daysAgo(0), 'en-US'),
    );
    expect(await page.getByTestId('metric-overdue-amount').textContent()).toBe(
      formatMoney(overdue, 'EUR', 'en-US'),
    );
    expect(await page.getByTestId('metric-overdue-count').textContent()).toBe(String(count));
    expect(await page.getByTestId('metric-dso').textContent()).toBe(
      `${new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 }).format(dso)} days`,
    );
    expect(await page.getByTestId('metric-balance').textContent()).toBe(
      formatMoney(
        buckets.reduce((a, b) => a + b, 0),
        'EUR',
        'en-US',
      ),
    );
    const table = page.getByRole('region', { name: 'Aging buckets' }).getByRole('table');
    for (const [i, uid] of BUCKETS.entries()) {
      expect(await table.locator(`tr[data-bucket="${uid}"] td`).first().textContent(), uid).toBe(
        formatMoney(buckets[i]!, 'EUR', 'en-US'),
      );
    }
    // The chart is a picture of the table, hidden from assistive technology.
    expect(await page.locator('svg.aging-chart').getAttribute('aria-hidden')).toBe('true');
    expect(await page.locator('svg.aging-chart rect').count()).toBe(5);
    await checkPage(page, 'metrics');
  });

  it('at 375 px: one column, nothing scrolls sideways', async () => {
    const phone = await newContext(browser, PHONE, await page.context().storageState());
    const small = await phone.newPage();
    await small.goto(`${server.url}/app/metrics`);
    await small.getByTestId('metric-overdue-amount').waitFor();
    expect(
      await small.evaluate(
        () => document.documentElement.scrollWidth <= document.documentElement.clientWidth,
      ),
    ).toBe(true);
    await checkPage(small, 'metrics-phone', { fullPage: true });
    await phone.close();
  });
});
