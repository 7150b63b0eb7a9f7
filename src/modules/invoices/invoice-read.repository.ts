import { getTableColumns } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { preparedQuery, type Database } from '../../platform/db/client.ts';
import { parties, partyContacts } from '../parties/parties.tables.ts';
import { assembleInvoiceViews, type InvoiceView } from './invoice-view.ts';
import { invoiceComments, invoiceIntegrations, invoiceLineItems, invoices } from './invoices.tables.ts';
import type { InvoiceRow } from './invoices.repository.ts';

type ColumnEntry = [key: string, column: ReturnType<typeof getTableColumns>[string]];
const columnEntries = new WeakMap<PgTable, ColumnEntry[]>();

/** A row that came back as JSON (snake_case, timestamps as text) → the table's typed row. */
function rowFromJson<T extends PgTable>(table: T, json: Record<string, unknown>): T['$inferSelect'] {
  // The column list once per table, not an Object.entries of it per row (this runs per request).
  let entries = columnEntries.get(table);
  if (!entries) columnEntries.set(table, (entries = Object.entries(getTableColumns(table))));
  const out: Record<string, unknown> = {};
  for (const [key, column] of entries) {
    const value = json[column.name];
    out[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return out as T['$inferSelect'];
}

interface InvoiceReadRow {
  invoice: Record<string, unknown>;
  lines: Record<string, unknown>[];
  parties: { party: Record<string, unknown>; contact: Record<string, unknown> | null }[];
  integrations: Record<string, unknown>[];
  assignees: string[];
  comments: {
    comment: Record<string, unknown>;
    actor: { id: number; fullName: string; avatarUrl: string | null; email: string };
  }[];
}

// The invoice and every relation of interface 2.11 in one statement: one round trip, planned once per
// connection (GET /api/invoices/{uid} is the hot read of the invoice screens). Each relation comes in
// the order invoices.repository.ts reads it for loadInvoiceViews (lines by position, integrations by
// creation, assignees by user uid, comments by creation), so both paths answer the same bytes. The
// statement's name carries a version: change the text, change the name.
const READ_INVOICE = `
select to_json(i) as invoice,
  (select coalesce(json_agg(l order by l.position, l.uid), '[]') from invoice_line_items l
    where l.organization_uid = i.organization_uid and l.invoice_uid = i.uid) as lines,
  (select coalesce(json_agg(json_build_object('party', to_json(p), 'contact',
            -- A party has at most one contact (unique index). A subquery per party, not a join: under
            -- row-level security the planner costed the join as a scan of all the organization's contacts.
            (select to_json(c) from party_contacts c where c.organization_uid = p.organization_uid and c.party_uid = p.uid))), '[]')
     from parties p
    where p.organization_uid = i.organization_uid and p.uid in (i.client_party_uid, i.service_provider_party_uid)) as parties,
  (select coalesce(json_agg(x order by x.created_at, x.uid), '[]') from invoice_integrations x
    where x.organization_uid = i.organization_uid and x.entity_uid = i.uid) as integrations,
  (select coalesce(json_agg(a.user_uid order by a.user_uid), '[]') from invoice_assignees a
    where a.organization_uid = i.organization_uid and a.invoice_uid = i.uid) as assignees,
  (select coalesce(json_agg(json_build_object('comment', to_json(cm), 'actor', json_build_object(
            'id', u.id, 'fullName', u.full_name, 'avatarUrl', u.avatar_url, 'email', u.email))
          order by cm.created_at, cm.uid), '[]')
     from invoice_comments cm join users u on u.uid = cm.author_user_uid
    where cm.organization_uid = i.organization_uid and cm.invoice_uid = i.uid) as comments
from invoices i
where i.organization_uid = any($1::uuid[]) and i.uid = $2`;

/**
 * The full invoice view of one of these organizations' invoices, or undefined, with the row and its
 * assignees for the access rule. Outside transactions.
 */
export async function readInvoiceView(
  database: Database,
  organizationUids: string[],
  uid: string,
): Promise<{ view: InvoiceView; row: InvoiceRow; assigneeUids: string[] } | undefined> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await preparedQuery<InvoiceReadRow>(database, 'remit_read_invoice_v3', READ_INVOICE, [
    organizationUids,
    uid,
  ]);
  if (!row) return undefined;
  const invoice = rowFromJson(invoices, row.invoice);
  const [view] = assembleInvoiceViews(
    [invoice],
    {
      lines: row.lines.map((l) => rowFromJson(invoiceLineItems, l)),
      partyRows: row.parties.map((p) => ({
        party: rowFromJson(parties, p.party),
        contact: p.contact ? rowFromJson(partyContacts, p.contact) : null,
      })),
      integrations: row.integrations.map((x) => rowFromJson(invoiceIntegrations, x)),
      assignees: row.assignees.map((userUid) => ({ invoiceUid: invoice.uid, userUid })),
      comments: row.comments.map((c) => ({
        comment: rowFromJson(invoiceComments, c.comment),
        actor: c.actor,
      })),
    },
    { includeComments: true },
  );
  return { view: view!, row: invoice, assigneeUids: row.assignees };
}

const IS_ASSIGNED = `select exists (
  select 1 from invoices i
   where i.organization_uid = $1 and i.uid = $2
     and (i.responsible = $4
          or exists (select 1 from invoice_assignees a
                      where a.organization_uid = i.organization_uid and a.invoice_uid = i.uid
                        and a.user_uid = $3))) as assigned`;

/**
 * Whether the invoice is assigned to the user now (listed as an assignee, or responsible): a member's
 * access to a held view, read from the database on every request (two primary-key probes).
 */
export async function isInvoiceAssignedTo(
  database: Database,
  organizationUid: string,
  uid: string,
  user: { uid: string; id: number },
): Promise<boolean> {
  const [row] = await preparedQuery<{ assigned: boolean }>(
    database,
    'remit_invoice_assigned_v1',
    IS_ASSIGNED,
    [organizationUid, uid, user.uid, user.id],
  );
  return row?.assigned === true;
}
