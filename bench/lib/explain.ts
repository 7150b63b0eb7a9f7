/**
 * EXPLAIN (ANALYZE, BUFFERS) of the statements behind the invoice scenarios, on the seeded bench
 * database. The list, GET and fallback-count statements are built with drizzle's query builder from
 * Remit's own table definitions, exactly as the repositories build them; the authentication and
 * invoice_counts statements are raw SQL in src and copied here. (Checked against the statements the
 * server sends, captured with `log_min_duration_statement = 0`: same text, same parameters.)
 */
import { and, asc, count, desc, eq, inArray, type SQL } from 'drizzle-orm';
import { QueryBuilder } from 'drizzle-orm/pg-core';
import pg from 'pg';
import {
  invoiceAssignees,
  invoiceComments,
  invoiceIntegrations,
  invoiceLineItems,
  invoices,
} from '../../src/modules/invoices/invoices.tables.ts';
import { parties, partyContacts } from '../../src/modules/parties/parties.tables.ts';
import { users } from '../../src/modules/tenancy/tenancy.tables.ts';

export interface Plan {
  name: string;
  /** What the statement is for in Remit. */
  role: string;
  sql: string;
  params: unknown[];
  plan: string[];
  execution_ms: number | null;
  planning_ms: number | null;
}

export interface PlanCapture {
  invoices: number;
  database: {
    shared_buffers: string;
    /** Sizes of the invoices heap and the indexes the scenarios use, in bytes. */
    relation_bytes: Record<string, number>;
  };
  plans: Plan[];
}

/** src/modules/api-keys/api-keys.repository.ts, findKeyForAuthentication (a named prepared statement). */
const AUTH_SQL = `select k.uid as key_uid, k.organization_uid as key_organization_uid, k.key_hash, k.scopes,
            (k.expires_at is not null and k.expires_at <= now()) as is_expired,
            (k.revoked_at is not null) as is_revoked,
            u.uid as user_uid, u.id as user_id, u.email, u.full_name, u.avatar_url, u.auth_version,
            case when u.auth_version = $2 then null else
              coalesce((select json_agg(json_build_object(
                          'organization_uid', m.organization_uid, 'organization_name', o.name,
                          'role', m.role, 'is_default', m.is_default) order by m.organization_uid)
                        from memberships m join organizations o on o.uid = m.organization_uid
                        where m.user_uid = u.uid), '[]'::json) end as memberships
       from api_keys k join users u on u.uid = k.user_uid
      where k.key_hash = $1`;

/** src/modules/invoices/invoice-lists.ts, countInvoices: an admin's status-only (or no) filter. */
const COUNTS_SQL = `select coalesce(sum(n), 0)::bigint as total from invoice_counts
        where organization_uid = $1 and invoice_type = $2 and ($3::text[] is null or status = any($3::text[]))`;

const RELATIONS = [
  'invoices',
  'invoices_pkey',
  'invoices_org_type_due_idx',
  'invoices_org_type_status_due_idx',
  'invoice_counts',
];

export async function capturePlans(
  databaseUrl: string,
  organizationUid: string,
  invoiceUid: string,
  seededInvoices: number,
): Promise<PlanCapture> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const qb = new QueryBuilder();
    const type = 'ACCOUNTS_PAYABLE';
    const ap = [eq(invoices.organizationUid, organizationUid), eq(invoices.invoiceType, type)];
    const approved = and(...ap, eq(invoices.status, 'approved'))!;
    const all = and(...ap)!;
    // invoice-lists.ts listInvoices: the page, sorted by the key with the uid as tiebreak.
    const page = (where: SQL, n: number) =>
      qb
        .select()
        .from(invoices)
        .where(where)
        .orderBy(desc(invoices.dueDate), desc(invoices.uid))
        .limit(25)
        .offset((n - 1) * 25)
        .toSQL();
    // countInvoices, when a filter narrows the set (or the caller is a member): rows are counted.
    const rowCount = (where: SQL) => qb.select({ total: count() }).from(invoices).where(where).toSQL();

    const invoice = await client.query<{ client: string | null; provider: string | null }>(
      'select client_party_uid as client, service_provider_party_uid as provider from invoices where uid = $1',
      [invoiceUid],
    );
    const partyUids = [invoice.rows[0]?.client, invoice.rows[0]?.provider].filter((u): u is string => !!u);
    const key = await client.query<{ key_hash: string; auth_version: number }>(
      `select k.key_hash, u.auth_version from api_keys k join users u on u.uid = k.user_uid
        where k.organization_uid = $1 order by k.created_at limit 1`,
      [organizationUid],
    );
    const org = organizationUid;
    const uids = [invoiceUid];
    const statements: Array<{ name: string; role: string; sql: string; params: unknown[] }> = [
      {
        name: 'list page 1, status=approved',
        role: 'AP list page',
        ...page(approved, 1),
      },
      {
        name: 'list page 200, status=approved',
        role: 'AP list page',
        ...page(approved, 200),
      },
      { name: 'list page 1, unfiltered', role: 'AP list page', ...page(all, 1) },
      { name: 'list page 200, unfiltered', role: 'AP list page', ...page(all, 200) },
      {
        name: 'count, status=approved (invoice_counts)',
        role: 'AP list total_items (admin, status-only filter)',
        sql: COUNTS_SQL,
        params: [org, type, ['approved']],
      },
      {
        name: 'count, unfiltered (invoice_counts)',
        role: 'AP list total_items (admin, no filter)',
        sql: COUNTS_SQL,
        params: [org, type, null],
      },
      {
        name: 'count fallback, status=approved (rows counted)',
        role: 'total_items when another filter narrows the set or the caller is a member',
        ...rowCount(approved),
      },
      {
        name: 'count fallback, unfiltered (rows counted)',
        role: 'total_items when another filter narrows the set or the caller is a member',
        ...rowCount(all),
      },
      {
        name: 'authentication (key + user)',
        role: 'every request: one statement, memberships only when auth_version changed',
        sql: AUTH_SQL,
        params: [key.rows[0]?.key_hash ?? '', key.rows[0]?.auth_version ?? 0],
      },
      {
        name: 'GET invoice: the row',
        role: 'invoices.repository.ts findInvoice',
        ...qb
          .select()
          .from(invoices)
          .where(and(inArray(invoices.organizationUid, [org]), eq(invoices.uid, invoiceUid)))
          .toSQL(),
      },
      {
        name: 'GET invoice: line items',
        role: 'listLineItems',
        ...qb
          .select()
          .from(invoiceLineItems)
          .where(and(eq(invoiceLineItems.organizationUid, org), inArray(invoiceLineItems.invoiceUid, uids)))
          .orderBy(asc(invoiceLineItems.position), asc(invoiceLineItems.uid))
          .toSQL(),
      },
      {
        name: 'GET invoice: parties and contacts',
        role: 'findPartiesByUids',
        ...qb
          .select({ party: parties, contact: partyContacts })
          .from(parties)
          .leftJoin(
            partyContacts,
            and(
              eq(partyContacts.organizationUid, parties.organizationUid),
              eq(partyContacts.partyUid, parties.uid),
            ),
          )
          .where(and(eq(parties.organizationUid, org), inArray(parties.uid, partyUids)))
          .toSQL(),
      },
      {
        name: 'GET invoice: integrations',
        role: 'listIntegrations',
        ...qb
          .select()
          .from(invoiceIntegrations)
          .where(
            and(eq(invoiceIntegrations.organizationUid, org), inArray(invoiceIntegrations.entityUid, uids)),
          )
          .orderBy(asc(invoiceIntegrations.createdAt))
          .toSQL(),
      },
      {
        name: 'GET invoice: assignees',
        role: 'listAssignees',
        ...qb
          .select({ invoiceUid: invoiceAssignees.invoiceUid, userUid: invoiceAssignees.userUid })
          .from(invoiceAssignees)
          .where(and(eq(invoiceAssignees.organizationUid, org), inArray(invoiceAssignees.invoiceUid, uids)))
          .toSQL(),
      },
      {
        name: 'GET invoice: comments',
        role: 'listComments',
        ...qb
          .select({
            comment: invoiceComments,
            actor: { id: users.id, fullName: users.fullName, avatarUrl: users.avatarUrl, email: users.email },
          })
          .from(invoiceComments)
          .innerJoin(users, eq(users.uid, invoiceComments.authorUserUid))
          .where(and(eq(invoiceComments.organizationUid, org), inArray(invoiceComments.invoiceUid, uids)))
          .orderBy(asc(invoiceComments.createdAt), asc(invoiceComments.uid))
          .toSQL(),
      },
    ];

    // Not what Remit runs: the rewrite docs/performance.md suggests for deep pages (the page's keys
    // from the index alone, then only its 25 rows), planned beside the real statement for comparison.
    const keysFirst = (status: string | null) => ({
      sql: `select i.* from invoices i
  join (select uid from invoices
         where organization_uid = $1 and invoice_type = $2${status ? ' and status = $3' : ''}
         order by due_date desc, uid desc limit 25 offset 4975) page on page.uid = i.uid
 order by i.due_date desc, i.uid desc`,
      params: status ? [org, type, status] : [org, type],
    });
    statements.push(
      {
        name: 'SUGGESTED: list page 200, status=approved, keys first',
        role: 'not run by Remit: the deep-page rewrite, for comparison',
        ...keysFirst('approved'),
      },
      {
        name: 'SUGGESTED: list page 200, unfiltered, keys first',
        role: 'not run by Remit: the deep-page rewrite, for comparison',
        ...keysFirst(null),
      },
    );

    const plans: Plan[] = [];
    for (const statement of statements) {
      // Once to warm the catalog caches of this connection, then the plan that is kept.
      const text = `explain (analyze, buffers) ${statement.sql}`;
      await client.query(text, statement.params);
      const result = await client.query<{ 'QUERY PLAN': string }>(text, statement.params);
      const plan = result.rows.map((r) => r['QUERY PLAN']);
      const ms = (label: string) => {
        const line = plan.find((l) => l.startsWith(`${label} Time:`));
        return line ? Number(/([\d.]+) ms/.exec(line)?.[1]) : null;
      };
      plans.push({
        name: statement.name,
        role: statement.role,
        sql: statement.sql,
        params: statement.params,
        plan,
        execution_ms: ms('Execution'),
        planning_ms: ms('Planning'),
      });
    }

    const settings = await client.query<{ v: string }>("select current_setting('shared_buffers') as v");
    const sizes = await client.query<{ name: string; bytes: string }>(
      'select relname as name, pg_relation_size(oid)::text as bytes from pg_class where relname = any($1)',
      [RELATIONS],
    );
    return {
      invoices: seededInvoices,
      database: {
        shared_buffers: settings.rows[0]?.v ?? '?',
        relation_bytes: Object.fromEntries(sizes.rows.map((r) => [r.name, Number(r.bytes)])),
      },
      plans,
    };
  } finally {
    await client.end();
  }
}
