import { useState, type FormEvent } from 'react';
import type { SuccessBody } from '@remit/client';
import {
  FilterActions,
  LabelledOptions,
  ListStates,
  Pager,
  SortHeader,
  TableBox,
} from '../components/list-parts.tsx';
import { useDocumentTitle } from '../components/states.tsx';
import { formatDate, formatMoney } from '../format.ts';
import {
  INVOICE_DEFAULTS,
  INVOICE_STATUSES,
  invoiceListQuery,
  labelOf,
  nextInvoiceSort,
  readInvoiceFilters,
  writeQuery,
  type InvoiceFilters,
  type InvoiceKind,
  type InvoiceSort,
} from '../list-query.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { useSignedIn } from '../session.tsx';
import { useResource } from '../use-resource.ts';

const PER_PAGE = 25;
type InvoiceRow = Extract<
  SuccessBody<'get', '/api/organization/{organization_uid}/ar-invoices'>['items'][number],
  { line_items: unknown }
>;

const listPath = (kind: InvoiceKind) => `/app/invoices/${kind}`;

/**
 * Receivable and payable invoices, one tab each: the list routes' filters, sorting by a column header and
 * pages, all in the address bar.
 */
export default function InvoicesPage({ kind }: { kind: InvoiceKind }) {
  const { client, organization } = useSignedIn();
  const { search } = useLocation();
  const filters = readInvoiceFilters(search, kind);
  const query = writeQuery(filters, INVOICE_DEFAULTS);
  useDocumentTitle(kind === 'receivable' ? 'Receivable invoices' : 'Payable invoices');
  const [attempt, setAttempt] = useState(0);
  const go = (next: InvoiceFilters) => navigate(`${listPath(kind)}${writeQuery(next, INVOICE_DEFAULTS)}`);

  const path =
    kind === 'receivable'
      ? ('/api/organization/{organization_uid}/ar-invoices' as const)
      : ('/api/organization/{organization_uid}/ap-invoices' as const);
  const list = useResource(
    `invoices:${organization.organization_uid}:${kind}${query}:${attempt}`,
    async () => {
      return client.GET(path, {
        params: {
          path: { organization_uid: organization.organization_uid },
          query: invoiceListQuery(filters, PER_PAGE) as {
            sort_by?: InvoiceSort;
            sort_order?: 'asc' | 'desc';
          },
        },
      });
    },
  );
  const clients = useResource(
    kind === 'receivable' ? `clients:${organization.organization_uid}` : null,
    async () =>
      (
        await client.GET('/api/parties', {
          params: {
            query: { role: 'client', per_page: 100, organization_uid: organization.organization_uid },
          },
        })
      ).data,
  );

  const apply = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const value = (name: string) => String(form.get(name) ?? '').trim();
    go({
      ...filters,
      status: value('status'),
      keyword: value('keyword'),
      client_uid: value('client_uid'),
      vendor_name: value('vendor_name'),
      due_date_from: value('due_date_from'),
      due_date_to: value('due_date_to'),
      issue_date_from: value('issue_date_from'),
      issue_date_to: value('issue_date_to'),
      page: 1,
    });
  };
  const filtered =
    writeQuery({ ...filters, sort_by: 'issue_date', sort_order: 'desc', page: 1 }, INVOICE_DEFAULTS) !== '';
  const sortHeader = (column: InvoiceSort, label: string, className?: string) => (
    <SortHeader
      label={label}
      active={filters.sort_by === column}
      descending={filters.sort_order === 'desc'}
      onSort={() => go(nextInvoiceSort(filters, column))}
      className={className}
    />
  );

  return (
    <div className="page page-wide">
      <h1>Invoices</h1>
      <nav className="tabs" aria-label="Invoice type">
        <Link to={listPath('receivable')} aria-current={kind === 'receivable' ? 'page' : undefined}>
          Receivable
        </Link>
        <Link to={listPath('payable')} aria-current={kind === 'payable' ? 'page' : undefined}>
          Payable
        </Link>
      </nav>

      {/* Keyed by the query so the fields show what the address says after Back or a shared link. */}
      <form
        key={`${kind}${query}`}
        className="filters"
        onSubmit={apply}
        role="search"
        aria-label="Filter invoices"
      >
        <div className="field">
          <label htmlFor="f-keyword">Search</label>
          <input
            id="f-keyword"
            name="keyword"
            type="search"
            defaultValue={filters.keyword}
            placeholder={kind === 'receivable' ? 'Number or client' : 'Number or vendor'}
            maxLength={200}
          />
        </div>
        <div className="field">
          <label htmlFor="f-status">Status</label>
          <select id="f-status" name="status" defaultValue={filters.status}>
            <option value="">Any</option>
            <LabelledOptions values={INVOICE_STATUSES[kind]} />
          </select>
        </div>
        {kind === 'receivable' ? (
          <div className="field">
            <label htmlFor="f-client">Client</label>
            <select id="f-client" name="client_uid" defaultValue={filters.client_uid}>
              <option value="">Any</option>
              {clients.status === 'ready' &&
                clients.data.items.map((party) => (
                  <option key={party.uid} value={party.uid}>
                    {party.name}
                  </option>
                ))}
            </select>
          </div>
        ) : (
          <div className="field">
            <label htmlFor="f-vendor">Vendor</label>
            <input id="f-vendor" name="vendor_name" defaultValue={filters.vendor_name} maxLength={200} />
          </div>
        )}
        <div className="field">
          <label htmlFor="f-due-from">Due from</label>
          <input id="f-due-from" name="due_date_from" type="date" defaultValue={filters.due_date_from} />
        </div>
        <div className="field">
          <label htmlFor="f-due-to">Due until</label>
          <input id="f-due-to" name="due_date_to" type="date" defaultValue={filters.due_date_to} />
        </div>
        <div className="field">
          <label htmlFor="f-issued-from">Issued from</label>
          <input
            id="f-issued-from"
            name="issue_date_from"
            type="date"
            defaultValue={filters.issue_date_from}
          />
        </div>
        <div className="field">
          <label htmlFor="f-issued-to">Issued until</label>
          <input id="f-issued-to" name="issue_date_to" type="date" defaultValue={filters.issue_date_to} />
        </div>
        <FilterActions filtered={filtered} clearTo={listPath(kind)} />
      </form>

      <ListStates
        list={list}
        noun="invoices"
        emptyTitle={filtered ? 'No invoice matches these filters' : `No ${kind} invoices yet`}
        filtered={filtered}
        clearTo={listPath(kind)}
        onRetry={() => setAttempt((n) => n + 1)}
      />
      {list.status === 'ready' && list.data.items.length > 0 && (
        <>
          <TableBox label={kind === 'receivable' ? 'Receivable invoices' : 'Payable invoices'}>
            <table className="data-table">
              <thead>
                <tr>
                  {sortHeader('invoice_number', 'Number')}
                  {kind === 'receivable' ? <th scope="col">Client</th> : sortHeader('vendor_name', 'Vendor')}
                  {sortHeader('status', 'Status')}
                  {sortHeader('issue_date', 'Issued')}
                  {sortHeader('due_date', 'Due')}
                  {sortHeader('amount_due', 'Amount due', 'numeric')}
                  <th scope="col" className="numeric">
                    Overdue
                  </th>
                </tr>
              </thead>
              <tbody>
                {(list.data.items as InvoiceRow[]).map((invoice) => (
                  <tr key={invoice.uid}>
                    <td>
                      <Link to={`/app/invoices/${invoice.uid}`} className="invoice-number">
                        {invoice.invoice_number}
                      </Link>
                    </td>
                    <td>
                      {kind === 'receivable'
                        ? (invoice.parties.client?.name ?? '—')
                        : invoice.vendor_name || (invoice.parties.service_provider?.name ?? '—')}
                    </td>
                    <td>
                      <span className={`status-pill status-${invoice.status}`}>
                        {labelOf(invoice.status)}
                      </span>
                    </td>
                    <td>{invoice.issue_date ? formatDate(invoice.issue_date) : '—'}</td>
                    <td>{invoice.due_date ? formatDate(invoice.due_date) : '—'}</td>
                    <td className="numeric">
                      {formatMoney(invoice.amount_due_cents, invoice.currency)}
                      {invoice.amount_paid_cents > 0 && invoice.amount_remaining_cents > 0 && (
                        <span className="muted cell-note">
                          {formatMoney(invoice.amount_remaining_cents, invoice.currency)} left
                        </span>
                      )}
                    </td>
                    <td className="numeric">
                      {invoice.overdue_days > 0 ? (
                        <span className="overdue">{invoice.overdue_days} days</span>
                      ) : (
                        '—'
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableBox>
          <Pager
            meta={list.data._meta}
            noun="invoices"
            hrefOf={(page) => `${listPath(kind)}${writeQuery({ ...filters, page }, INVOICE_DEFAULTS)}`}
          />
        </>
      )}
    </div>
  );
}
