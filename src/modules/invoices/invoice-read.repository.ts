import fastJsonStringify from 'fast-json-stringify';
import { preparedQuery, type Database } from '../../platform/db/client.ts';
import { fieldArray, type StoredField } from './invoice-fields.ts';
import { Invoice } from './invoices.schemas.ts';

/*
 * GET /api/invoices/{uid}, the hot read of the invoice screens: one named statement that reads the
 * invoice and every relation of interface 2.11 and writes the answer's JSON itself, so the server
 * neither parses rows nor builds and serializes ≈ 80 fields per request (docs/performance.md#get-invoice-the-answer-written-by-the-statement).
 *
 * The text is compact JSON in the order of the `Invoice` response schema, the same bytes the
 * serializer writes for the view built by loadInvoiceViews (PUT's answer, the list's full item):
 * test/modules/invoice-hot-reads.test.ts compares them byte for byte, hostile text included. Only what
 * the schema lists is written, so the schema stays the allow-list. The two parts that come from jsonb
 * (custom fields, integration metadata) go through JSON.parse and the schema's own serializer, as on
 * the other paths: PostgreSQL would print their numbers and key order differently.
 */

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;
/** SQL expressions giving each kind of value as JSON text ('null' for NULL). */
const json = {
  text: (e: string) => `coalesce(to_json(${e})::text, 'null')`,
  number: (e: string) => `coalesce((${e})::text, 'null')`,
  // Milliseconds, truncated, in UTC: what Date#toISOString prints for the value the driver reads.
  time: (e: string) => `coalesce('"' || to_char((${e}) at time zone 'UTC', ${ISO}) || '"', 'null')`,
};
const bool = json.number;

/** An object's JSON text from [key, SQL expression of the value's JSON text], in that order. */
function object(entries: [string, string][]): string {
  return entries
    .map(([key, value], i) => `'${i === 0 ? '{' : ','}${JSON.stringify(key)}:' || ${value}`)
    .concat(`'}'`)
    .join(' || ');
}

/** A JSON array's text from a subquery's rows: `item` per row, in `orderBy`. */
function array(item: string, from: string, orderBy: string): string {
  return `(select coalesce('[' || string_agg(${item}, ',' order by ${orderBy}) || ']', '[]') ${from})`;
}

const lineItem = object([
  ['uid', json.text('l.uid')],
  ['invoice_uid', json.text('l.invoice_uid')],
  ['context_type_uid', json.text('l.context_type_uid')],
  ['context_type', json.text('l.context_type')],
  ['context_name', json.text('l.context_name')],
  ['sku', json.text('l.sku')],
  ['currency', json.text('l.currency')],
  ['quantity', json.number('l.quantity')],
  ['unit_price', json.number('l.unit_price')],
  ['line_total', json.number('l.line_total')],
]);

// A party has at most one contact (unique index); a subquery per party, not a join: under row-level
// security the planner costed the join as a scan of all the organization's contacts.
const party = (column: string) =>
  `coalesce((select ${object([
    ['uid', json.text('p.uid')],
    ['name', json.text('p.name')],
    ['address', json.text('p.address')],
    ['role', json.text('p.role')],
    [
      'billing_contact',
      `coalesce((select ${object([
        ['uid', json.text('c.uid')],
        ['party_uid', json.text('c.party_uid')],
        ['name', json.text('c.name')],
        ['title', json.text('c.title')],
        ['email', json.text('c.email')],
        ['phone', json.text('c.phone')],
      ])} from party_contacts c where c.organization_uid = p.organization_uid and c.party_uid = p.uid), 'null')`,
    ],
  ])} from parties p where p.organization_uid = i.organization_uid and p.uid = ${column}), 'null')`;

const comment = object([
  ['uid', json.text('cm.uid')],
  ['text', json.text('cm.text')],
  ['created_at', json.time('cm.created_at')],
  ['last_modified_at', json.time('cm.last_modified_at')],
  ['resolved_by', json.number('cm.resolved_by')],
  ['resolved_at', json.time('cm.resolved_at')],
  [
    'actor',
    object([
      ['id', json.number('u.id')],
      ['fullname', json.text('u.full_name')],
      ['avatar', json.text('u.avatar_url')],
      ['email', json.text('u.email')],
    ]),
  ],
]);

// Overdue days and age as invoice-totals.ts counts them (whole UTC days), as of $3, the caller's day
// number (days since 1970-01-01 UTC): the clock stays the server's, as on the other paths.
const SETTLED = `('paid', 'void', 'uncollectible', 'rejected', 'draft')`;
const dayOf = (e: string) => `floor(extract(epoch from ${e}) / 86400)::int`;
const overdueDays = `(case when i.due_date is null or i.amount_remaining_cents <= 0 or i.status in ${SETTLED}
  then 0 else greatest(0, $3::int - ${dayOf('i.due_date')}) end)`;
const age = `(case when i.issue_date is null then 0 else greatest(0, $3::int - ${dayOf('i.issue_date')}) end)`;

/** SQL for each field of the `Invoice` schema; `null` marks the two written by the server. */
const FIELDS: Record<string, string | null> = {
  uid: json.text('i.uid'),
  organization_uid: json.text('i.organization_uid'),
  invoice_number: json.text('i.invoice_number'),
  invoice_type: json.text('i.invoice_type'),
  status: json.text('i.status'),
  collection_method: json.text('i.collection_method'),
  issue_date: json.time('i.issue_date'),
  due_date: json.time('i.due_date'),
  paid_date: json.time('i.paid_date'),
  subtotal_cents: json.number('i.subtotal_cents'),
  discount_cents: json.number('i.discount_cents'),
  tax_cents: json.number('i.tax_cents'),
  total: json.number('i.total_cents'),
  total_cents: json.number('i.total_cents'),
  pre_payment_credit_notes_cents: json.number('i.pre_payment_credit_notes_cents'),
  amount_due_cents: json.number('i.amount_due_cents'),
  amount_paid_cents: json.number('i.amount_paid_cents'),
  amount_remaining_cents: json.number('i.amount_remaining_cents'),
  overdue_days: json.number(overdueDays),
  age: json.number(age),
  currency: json.text('i.currency'),
  invoice_link: json.text('i.invoice_link'),
  document_uid: json.text('i.document_uid'),
  invoice_blueprint_uid: json.text('i.invoice_blueprint_uid'),
  target_party_uid: json.text('i.target_party_uid'),
  has_comments: bool('i.has_comments'),
  // Lines by position, comments and integrations by creation, assignees by user uid: the order
  // invoices.repository.ts reads them in for loadInvoiceViews.
  line_items: array(
    lineItem,
    'from invoice_line_items l where l.organization_uid = i.organization_uid and l.invoice_uid = i.uid',
    'l.position, l.uid',
  ),
  invoice_fields: null,
  parties: object([
    ['client', party('i.client_party_uid')],
    ['service_provider', party('i.service_provider_party_uid')],
  ]),
  integrations: null,
  invoice_notes: object([
    ['invoice_memo', json.text('i.invoice_memo')],
    ['invoice_footer', json.text('i.invoice_footer')],
  ]),
  comments: array(
    comment,
    `from invoice_comments cm join users u on u.uid = cm.author_user_uid
      where cm.organization_uid = i.organization_uid and cm.invoice_uid = i.uid`,
    'cm.created_at, cm.uid',
  ),
  stamp_number: json.text('i.stamp_number'),
  received_date: json.time('i.received_date'),
  document_type: json.text('i.document_type'),
  registration_number: json.text('i.registration_number'),
  vendor_name: json.text('i.vendor_name'),
  vendor_nit: json.text('i.vendor_nit'),
  approved_by: json.number('i.approved_by'),
  approval_date: json.time('i.approval_date'),
  registered_by: json.number('i.registered_by'),
  registration_date: json.time('i.registration_date'),
  responsible: json.number('i.responsible'),
  assignee_user_uids: `(select coalesce(to_json(array_agg(a.user_uid order by a.user_uid))::text, '[]')
    from invoice_assignees a where a.organization_uid = i.organization_uid and a.invoice_uid = i.uid)`,
  revision: json.number('i.revision'),
  created_at: json.time('i.created_at'),
  updated_at: json.time('i.updated_at'),
};

/**
 * The answer's text in three parts around the two fields the server writes, in the serializer's order
 * (`{"uid":…,"invoice_fields":` · `,"parties":…,"integrations":` · `,"invoice_notes":…}`). A field
 * added to the schema and not here stops the start (the tests load this module).
 */
function statementParts(): string[] {
  // fast-json-stringify writes the required properties first, then the optional ones (`comments`).
  const required = new Set<string>(Invoice.required ?? []);
  const keys = Object.keys(Invoice.properties).sort(
    (a, b) => Number(required.has(b)) - Number(required.has(a)),
  );
  const differ = [
    ...keys.filter((k) => !(k in FIELDS)),
    ...Object.keys(FIELDS).filter((k) => !keys.includes(k)),
  ];
  if (differ.length > 0) {
    throw new Error(`invoice-read.repository.ts: FIELDS and the Invoice schema differ: ${differ.join(', ')}`);
  }
  const parts: string[][] = [[]];
  let literal = '';
  keys.forEach((key, i) => {
    literal += `${i === 0 ? '{' : ','}${JSON.stringify(key)}:`;
    const value = FIELDS[key]!;
    if (value === null) {
      parts.at(-1)!.push(`'${literal}'`);
      parts.push([]);
    } else {
      parts.at(-1)!.push(`'${literal}'`, value);
    }
    literal = '';
  });
  parts.at(-1)!.push(`'}'`);
  if (parts.length !== 3 || keys.indexOf('invoice_fields') > keys.indexOf('integrations')) {
    throw new Error('invoice-read.repository.ts: expected invoice_fields, then integrations');
  }
  return parts.map((pieces) => `(${pieces.join(' || ')})`);
}

const [HEAD, MIDDLE, TAIL] = statementParts();

// The statement's name carries a version: change the text, change the name.
const READ_INVOICE = `
select i.organization_uid, i.responsible,
  array(select a.user_uid::text from invoice_assignees a
         where a.organization_uid = i.organization_uid and a.invoice_uid = i.uid) as assignee_uids,
  i.invoice_fields as fields,
  (select coalesce(json_agg(json_build_object(
            'uid', x.uid, 'entity_uid', x.entity_uid, 'integration_name', x.integration_name,
            'integration_uid', x.integration_uid, 'created_at', ${json.time('x.created_at')}::json,
            'updated_at', ${json.time('x.updated_at')}::json, 'integration_metadata', x.integration_metadata)
          order by x.created_at, x.uid), '[]')
     from invoice_integrations x where x.organization_uid = i.organization_uid and x.entity_uid = i.uid) as integrations,
  ${HEAD} as head,
  ${MIDDLE} as middle,
  ${TAIL} as tail
from invoices i
where i.organization_uid = any($1::uuid[]) and i.uid = $2`;

interface InvoiceReadRow {
  organization_uid: string;
  responsible: number | null;
  assignee_uids: string[];
  fields: Record<string, StoredField>;
  integrations: unknown[];
  head: string;
  middle: string;
  tail: string;
}

// The schema's own serializers (fast-json-stringify, as for every answer) for the two parts the
// server writes.
const serializeFields = fastJsonStringify(Invoice.properties.invoice_fields);
const serializeIntegrations = fastJsonStringify(Invoice.properties.integrations);

const DAY_MS = 86_400_000;

/**
 * One of these organizations' invoices as the JSON text of the `Invoice` schema, or undefined, with
 * what the access rule needs (its organization, responsible user and assignees). Outside transactions.
 */
export async function readInvoiceJson(
  database: Database,
  organizationUids: string[],
  uid: string,
  now = new Date(),
): Promise<
  { json: string; organizationUid: string; responsible: number | null; assigneeUids: string[] } | undefined
> {
  if (organizationUids.length === 0) return undefined;
  const [row] = await preparedQuery<InvoiceReadRow>(database, 'remit_read_invoice_v4', READ_INVOICE, [
    organizationUids,
    uid,
    Math.floor(now.getTime() / DAY_MS),
  ]);
  if (!row) return undefined;
  const fields = fieldArray(row.fields);
  const json =
    row.head +
    (fields.length === 0 ? '[]' : serializeFields(fields)) +
    row.middle +
    (row.integrations.length === 0 ? '[]' : serializeIntegrations(row.integrations)) +
    row.tail;
  return {
    json,
    organizationUid: row.organization_uid,
    responsible: row.responsible,
    assigneeUids: row.assignee_uids,
  };
}
