import { describe, expect, it } from 'vitest';
import {
  ariaSort,
  INVOICE_DEFAULTS,
  invoiceListQuery,
  labelOf,
  nextInvoiceSort,
  nextTaskSort,
  readInvoiceFilters,
  readTaskFilters,
  TASK_DEFAULTS,
  taskListQuery,
  writeQuery,
} from './list-query.ts';

const CLIENT = '3f2a1b9c-0d4e-4f5a-8b6c-7d8e9f0a1b2c';

describe('invoice filters in the address bar', () => {
  it('reads known values and drops what the route would refuse', () => {
    const search = new URLSearchParams(
      `status=open&keyword=AR-1&client_uid=${CLIENT}&due_date_from=2026-01-01&due_date_to=2026-13-45&sort_by=amount_due&sort_order=asc&page=3&bogus=1`,
    );
    expect(readInvoiceFilters(search, 'receivable')).toEqual({
      ...INVOICE_DEFAULTS,
      status: 'open',
      keyword: 'AR-1',
      client_uid: CLIENT,
      due_date_from: '2026-01-01',
      sort_by: 'amount_due',
      sort_order: 'asc',
      page: 3,
    });
  });

  it('keeps each kind to its own statuses and party filter', () => {
    const search = new URLSearchParams(`status=open&client_uid=${CLIENT}&vendor_name=Initech`);
    const payable = readInvoiceFilters(search, 'payable');
    expect(payable.status).toBe('');
    expect(payable.client_uid).toBe('');
    expect(payable.vendor_name).toBe('Initech');
    expect(readInvoiceFilters(new URLSearchParams('status=in_review'), 'payable').status).toBe('in_review');
    expect(readInvoiceFilters(search, 'receivable').vendor_name).toBe('');
  });

  it('falls back on bad sorting and paging', () => {
    const filters = readInvoiceFilters(
      new URLSearchParams('sort_by=total; drop&sort_order=up&page=-2'),
      'receivable',
    );
    expect(filters.sort_by).toBe('issue_date');
    expect(filters.sort_order).toBe('desc');
    expect(filters.page).toBe(1);
    expect(readInvoiceFilters(new URLSearchParams('page=1.5'), 'receivable').page).toBe(1);
  });

  it('writes only what differs from the defaults, and reads back the same', () => {
    expect(writeQuery(INVOICE_DEFAULTS, INVOICE_DEFAULTS)).toBe('');
    const filters = { ...INVOICE_DEFAULTS, status: 'paid', keyword: 'a b&c', page: 2 };
    const query = writeQuery(filters, INVOICE_DEFAULTS);
    expect(query).toBe('?status=paid&keyword=a+b%26c&page=2');
    expect(readInvoiceFilters(new URLSearchParams(query), 'receivable')).toEqual(filters);
  });

  it('sends the set filters with the paging to the route', () => {
    expect(invoiceListQuery({ ...INVOICE_DEFAULTS, status: 'open' }, 25)).toEqual({
      per_page: 25,
      status: 'open',
      sort_by: 'issue_date',
      sort_order: 'desc',
      page: 1,
    });
  });

  it('a header click flips the column it sorts by, starts another in its natural order, back to page 1', () => {
    const onDue = nextInvoiceSort({ ...INVOICE_DEFAULTS, page: 4 }, 'due_date');
    expect([onDue.sort_by, onDue.sort_order, onDue.page]).toEqual(['due_date', 'desc', 1]);
    expect(nextInvoiceSort(onDue, 'due_date').sort_order).toBe('asc');
    expect(nextInvoiceSort(onDue, 'invoice_number').sort_order).toBe('asc');
    expect(nextInvoiceSort(onDue, 'amount_due').sort_order).toBe('desc');
  });
});

describe('task filters in the address bar', () => {
  it('reads known values only', () => {
    const search = new URLSearchParams(
      `status=done&priority=urgent&type=hil_approval&assignee=${CLIENT}&q=call&sort=due_date&page=2`,
    );
    expect(readTaskFilters(search)).toEqual({
      status: 'done',
      priority: 'urgent',
      type: 'hil_approval',
      assignee: CLIENT,
      q: 'call',
      sort: 'due_date',
      page: 2,
    });
    const bad = readTaskFilters(new URLSearchParams('status=gone&priority=x&type=y&assignee=me&sort=-title'));
    expect(bad).toEqual(TASK_DEFAULTS);
  });

  it('maps to the route: the assignee is a user uid, the sort as given', () => {
    expect(taskListQuery({ ...TASK_DEFAULTS, assignee: CLIENT, q: 'x' }, 25)).toEqual({
      per_page: 25,
      page: 1,
      sort: '-created_at',
      assignee_user_uid: CLIENT,
      q: 'x',
    });
  });

  it('sorting flips the active column; times start newest first, others ascending', () => {
    expect(nextTaskSort(TASK_DEFAULTS, 'created_at').sort).toBe('created_at');
    expect(nextTaskSort(TASK_DEFAULTS, 'priority').sort).toBe('priority');
    expect(nextTaskSort({ ...TASK_DEFAULTS, sort: 'priority' }, 'priority').sort).toBe('-priority');
    expect(nextTaskSort({ ...TASK_DEFAULTS, page: 3 }, 'updated_at')).toMatchObject({
      sort: '-updated_at',
      page: 1,
    });
  });
});

it('names sort states and values for people', () => {
  expect(ariaSort(false, true)).toBe('none');
  expect(ariaSort(true, true)).toBe('descending');
  expect(ariaSort(true, false)).toBe('ascending');
  expect(labelOf('in_review')).toBe('In review');
  expect(labelOf('hil_approval')).toBe('Approval');
});
