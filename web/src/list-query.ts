/**
 * The lists' state lives in the address bar (`?status=open&sort_by=due_date&page=2`), so a reload or a
 * shared link shows the same list. These pure helpers read it, write it back, and turn it into the list
 * routes' query: only known names and allowed values pass, so a hand-edited link never makes the API
 * answer 400.
 */

export type InvoiceKind = 'receivable' | 'payable';

export const INVOICE_STATUSES: Record<InvoiceKind, readonly string[]> = {
  receivable: ['draft', 'open', 'paid', 'void', 'uncollectible'],
  payable: ['received', 'in_review', 'approved', 'registered', 'scheduled', 'paid', 'rejected', 'void'],
};

/** The columns a person can sort an invoice list by (a subset of the route's `sort_by`). */
export const INVOICE_SORTS = [
  'invoice_number',
  'status',
  'issue_date',
  'due_date',
  'amount_due',
  'vendor_name',
] as const;
export type InvoiceSort = (typeof INVOICE_SORTS)[number];

export interface InvoiceFilters {
  status: string;
  keyword: string;
  client_uid: string;
  vendor_name: string;
  due_date_from: string;
  due_date_to: string;
  issue_date_from: string;
  issue_date_to: string;
  sort_by: InvoiceSort;
  sort_order: 'asc' | 'desc';
  page: number;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A list's page from the address bar: a whole number from 1 to 100,000, else 1. */
export const pageOf = (value: string | null) => {
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 && n <= 100_000 ? n : 1;
};
const text = (value: string | null) => (value ?? '').slice(0, 200);
/** A real calendar day only: the route answers 400 for 2026-02-30. */
const day = (value: string | null) => {
  if (!value || !DAY.test(value)) return '';
  const time = Date.parse(`${value}T00:00:00Z`);
  return Number.isFinite(time) && new Date(time).toISOString().startsWith(value) ? value : '';
};
const oneOf = <T extends string>(value: string | null, allowed: readonly T[], fallback: T): T =>
  allowed.includes(value as T) ? (value as T) : fallback;

export const INVOICE_DEFAULTS: Omit<InvoiceFilters, 'sort_by'> & { sort_by: InvoiceSort } = {
  status: '',
  keyword: '',
  client_uid: '',
  vendor_name: '',
  due_date_from: '',
  due_date_to: '',
  issue_date_from: '',
  issue_date_to: '',
  sort_by: 'issue_date',
  sort_order: 'desc',
  page: 1,
};

export function readInvoiceFilters(search: URLSearchParams, kind: InvoiceKind): InvoiceFilters {
  const status = search.get('status');
  return {
    status: status && INVOICE_STATUSES[kind].includes(status) ? status : '',
    keyword: text(search.get('keyword')),
    client_uid:
      kind === 'receivable' && UUID.test(search.get('client_uid') ?? '') ? search.get('client_uid')! : '',
    vendor_name: kind === 'payable' ? text(search.get('vendor_name')) : '',
    due_date_from: day(search.get('due_date_from')),
    due_date_to: day(search.get('due_date_to')),
    issue_date_from: day(search.get('issue_date_from')),
    issue_date_to: day(search.get('issue_date_to')),
    sort_by: oneOf(search.get('sort_by'), INVOICE_SORTS, INVOICE_DEFAULTS.sort_by),
    sort_order: oneOf(search.get('sort_order'), ['asc', 'desc'] as const, INVOICE_DEFAULTS.sort_order),
    page: pageOf(search.get('page')),
  };
}

/**
 * The address-bar query for `filters`: only what differs from the defaults, in a fixed order, so the
 * same list always has the same link.
 */
export function writeQuery<T extends object>(filters: T, defaults: T): string {
  const out = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) {
    if (value !== '' && value !== (defaults as Record<string, unknown>)[name]) out.set(name, String(value));
  }
  const query = out.toString();
  return query ? `?${query}` : '';
}

/** The list route's query: the filters set, plus the paging the console uses. */
export function invoiceListQuery(filters: InvoiceFilters, perPage: number) {
  const query: Record<string, string | number> = { per_page: perPage };
  for (const [name, value] of Object.entries(filters)) if (value !== '') query[name] = value;
  return query;
}

/**
 * A click on a column header: the same column flips the order, another column starts with the order
 * that reads best for it (newest dates and largest amounts first, names A→Z), back on the first page.
 */
export function nextInvoiceSort(filters: InvoiceFilters, column: InvoiceSort): InvoiceFilters {
  const order =
    filters.sort_by === column
      ? filters.sort_order === 'asc'
        ? 'desc'
        : 'asc'
      : column === 'invoice_number' || column === 'status' || column === 'vendor_name'
        ? 'asc'
        : 'desc';
  return { ...filters, sort_by: column, sort_order: order, page: 1 };
}

export const TASK_STATUSES = ['todo', 'in_progress', 'in_review', 'done', 'canceled'] as const;
export const TASK_PRIORITIES = ['urgent', 'high', 'medium', 'low'] as const;
export const TASK_TYPES = ['task', 'hil_approval'] as const;
export const TASK_SORTS = ['created_at', 'updated_at', 'due_date', 'priority', 'status'] as const;
export type TaskSort = (typeof TASK_SORTS)[number];

export interface TaskFilters {
  status: string;
  priority: string;
  type: string;
  /** A user's uid, or `''` for anyone. */
  assignee: string;
  q: string;
  /** `-created_at` (descending) or `due_date` (ascending), as the route takes it. */
  sort: string;
  page: number;
}

export const TASK_DEFAULTS: TaskFilters = {
  status: '',
  priority: '',
  type: '',
  assignee: '',
  q: '',
  sort: '-created_at',
  page: 1,
};

export function readTaskFilters(search: URLSearchParams): TaskFilters {
  const status = search.get('status');
  const priority = search.get('priority');
  const type = search.get('type');
  const sort = search.get('sort') ?? '';
  const sortField = sort.replace(/^-/, '');
  return {
    status: status && (TASK_STATUSES as readonly string[]).includes(status) ? status : '',
    priority: priority && (TASK_PRIORITIES as readonly string[]).includes(priority) ? priority : '',
    type: type && (TASK_TYPES as readonly string[]).includes(type) ? type : '',
    assignee: UUID.test(search.get('assignee') ?? '') ? search.get('assignee')! : '',
    q: text(search.get('q')),
    sort: (TASK_SORTS as readonly string[]).includes(sortField) ? sort : TASK_DEFAULTS.sort,
    page: pageOf(search.get('page')),
  };
}

export function taskListQuery(filters: TaskFilters, perPage: number) {
  const query: Record<string, string | number> = {
    per_page: perPage,
    sort: filters.sort,
    page: filters.page,
  };
  if (filters.status) query.status = filters.status;
  if (filters.priority) query.priority = filters.priority;
  if (filters.type) query.type = filters.type;
  if (filters.assignee) query.assignee_user_uid = filters.assignee;
  if (filters.q) query.q = filters.q;
  return query;
}

/** The same column flips the order; another starts descending for times, ascending otherwise. */
export function nextTaskSort(filters: TaskFilters, column: TaskSort): TaskFilters {
  const [current, descending] = filters.sort.startsWith('-')
    ? [filters.sort.slice(1), true]
    : [filters.sort, false];
  const startDescending = column === 'created_at' || column === 'updated_at';
  const descend = current === column ? !descending : startDescending;
  return { ...filters, sort: `${descend ? '-' : ''}${column}`, page: 1 };
}

/** `aria-sort` of a column header. */
export function ariaSort(active: boolean, descending: boolean): 'ascending' | 'descending' | 'none' {
  if (!active) return 'none';
  return descending ? 'descending' : 'ascending';
}

/** `in_review` → `In review`. */
export const labelOf = (value: string) => {
  const words = value.replace(/_/g, ' ');
  return words === 'hil approval' ? 'Approval' : words.charAt(0).toUpperCase() + words.slice(1);
};
