import { sql } from 'drizzle-orm';
import type { Db } from '../../platform/db/client.ts';
import { rawQuery } from '../../platform/db/client.ts';
import { notFound } from '../../platform/http/errors.ts';

export interface SeedOptions {
  organizationUid: string;
  invoices: number;
  /** Share of the invoices that are payable (the rest receivable). */
  apRatio: number;
  parties: number;
  /** Work tasks (type `task`), created by the organization's first admin. Default 0. */
  tasks?: number;
  batchSize?: number;
  /**
   * From this many rows to add to a table on (invoices, parties, work tasks), its indexes are rebuilt
   * after the load instead of kept (default 50,000).
   */
  bulkThreshold?: number;
}

export interface SeedResult {
  organization_uid: string;
  parties: number;
  products: number;
  invoices: number;
  payable: number;
  receivable: number;
  tasks: number;
  seconds: number;
}

const VENDOR_WORDS = [
  'Acme',
  'Globex',
  'Initech',
  'Umbrella',
  'Stark',
  'Wayne',
  'Hooli',
  'Vandelay',
  'Wonka',
  'Tyrell',
  'Cyberdyne',
  'Soylent',
];
const VENDOR_KINDS = [
  'Supplies',
  'Logistics',
  'Consulting',
  'Industries',
  'Foods',
  'Software',
  'Freight',
  'Energy',
];
const CITIES = ['Bogotá', 'Medellín', 'Austin', 'Lisbon', 'Berlin', 'Toronto', 'Lyon', 'Osaka'];

/**
 * The rare word of the seeded text, for selective search benchmarks: it replaces the first word of the
 * name of one client and one vendor in each block of 1,000 party positions, placed in the block by a
 * hash (0.2 % of the parties, and of the clients), so it is also in the customer name of ≈ 0.2 % of the
 * invoices and in ≈ 0.2 % of the task descriptions (those about such a client), spread evenly over
 * their dates. It appears nowhere else.
 */
export const SEED_RARE_WORD = 'Zephyr';
const hash = (salt: string, x: string) => `('x' || left(md5('${salt}:' || ${x}), 8))::bit(32)::bigint`;
/** In each block of 1,000 positions, one client (even) and one vendor (odd) position, placed by hash. */
const rare = (i: string) =>
  `${i} % 1000 in (2 * (${hash('rare-client', `${i} / 1000`)} % 500), 2 * (${hash('rare-vendor', `${i} / 1000`)} % 500) + 1)`;
const sqlArray = (values: string[]) => `array[${values.map((w) => `'${w}'`).join(',')}]`;

/** A party's name by position (SQL): "Acme Supplies 1", "Globex Supplies 2", …, "Zephyr Foods 1234". */
function partyName(i: string): string {
  return `case when ${rare(i)} then '${SEED_RARE_WORD}' else (${sqlArray(VENDOR_WORDS)})[1 + ${i} % ${VENDOR_WORDS.length}] end
             || ' ' || (${sqlArray(VENDOR_KINDS)})[1 + (${i} / ${VENDOR_WORDS.length}) % ${VENDOR_KINDS.length}] || ' ' || ${i}`;
}

/**
 * Demo and benchmark data, deterministic for a given organization and count: the same call always
 * writes the same rows (uids derive from md5 of the organization, kind and position). Invoices, parties
 * and tasks are generated inside PostgreSQL in batches (INSERT … SELECT over generate_series), so a
 * million rows take seconds, not a million round trips.
 */
export async function seedOrganization(db: Db, options: SeedOptions): Promise<SeedResult> {
  const started = Date.now();
  const org = options.organizationUid;
  const [exists] = await rawQuery<{ one: number }>(db, 'select 1 as one from organizations where uid = $1', [
    org,
  ]);
  if (!exists) throw notFound('Organization');
  const parties = Math.max(2, options.parties);
  const tasks = Math.max(0, options.tasks ?? 0);
  const batch = options.batchSize ?? 100_000;
  const threshold = options.bulkThreshold ?? 50_000;
  const missing = async (table: 'invoices' | 'parties' | 'work_tasks', wanted: number) => {
    const [row] = await rawQuery<{ n: number }>(
      db,
      `select count(*)::int as n from ${table} where organization_uid = $1`,
      [org],
    );
    return wanted - (row?.n ?? 0);
  };

  // Parties (even positions clients, odd ones vendors) with a billing contact each.
  await bulkLoad(db, 'parties', (await missing('parties', parties)) >= threshold, () =>
    inBatches(db, parties, batch, async (tx, from, to) => {
      await tx.execute(
        sql.raw(`
      insert into parties (uid, organization_uid, name, role, address, tax_id, created_at, updated_at)
      select md5('${org}:party:' || i)::uuid, '${org}', ${partyName('i')},
             case when i % 2 = 0 then 'client' else 'vendor' end,
             (10 + i % 90) || ' Market Street, ' || (${sqlArray(CITIES)})[1 + i % ${CITIES.length}],
             '900' || lpad(i::text, 6, '0') || '-' || (i % 10),
             now() - make_interval(days => i % 700), now() - make_interval(days => i % 365)
        from generate_series(${from}, ${to}) as i
      on conflict (uid) do nothing`),
      );
      await tx.execute(
        sql.raw(`
      insert into party_contacts (uid, organization_uid, party_uid, name, title, email, phone)
      select md5('${org}:contact:' || i)::uuid, '${org}', md5('${org}:party:' || i)::uuid,
             'Contact ' || i, 'Accounts', 'billing' || i || '@party' || i || '.example', '+1 555 ' || lpad(i::text, 4, '0')
        from generate_series(${from}, ${to}) as i
      on conflict do nothing`),
      );
    }),
  );
  await db.transaction(async (tx) => {
    await tx.execute(
      sql.raw(`
      insert into products (uid, organization_uid, sku, name, context_type, unit_price, currency)
      select md5('${org}:product:' || i)::uuid, '${org}', 'SKU-' || lpad(i::text, 4, '0'),
             case when i <= 45 then 'Service ' || i else 'Discount ' || i end,
             case when i <= 45 then 'PRODUCT' else 'DISCOUNT' end, 1000 + (i * 737) % 50000, 'USD'
        from generate_series(1, 50) as i
      on conflict do nothing`),
    );
  });

  // In bulk, the counting trigger is off and invoice_counts is recounted once afterwards, instead of
  // a million increments of the same counter rows.
  await bulkLoad(
    db,
    'invoices',
    (await missing('invoices', options.invoices)) >= threshold,
    () => insertInvoices(db, org, options, batch, parties),
    {
      trigger: 'invoices_count_insert_delete',
      recount: `delete from invoice_counts;
       insert into invoice_counts (organization_uid, invoice_type, status, n)
       select organization_uid, invoice_type, status, count(*) from invoices group by 1, 2, 3`,
    },
  );

  if (tasks > 0) {
    const [admin] = await rawQuery<{ uid: string }>(
      db,
      `select user_uid as uid from memberships where organization_uid = $1 and role = 'admin'
        order by created_at, user_uid limit 1`,
      [org],
    );
    if (!admin) throw notFound('An admin of the organization');
    await bulkLoad(db, 'work_tasks', (await missing('work_tasks', tasks)) >= threshold, () =>
      insertTasks(db, org, admin.uid, tasks, options.invoices, parties, batch),
    );
  }

  const [counts] = await rawQuery<{ ap: number; ar: number; tasks: number }>(
    db,
    `select count(*) filter (where invoice_type = 'ACCOUNTS_PAYABLE')::int as ap,
            count(*) filter (where invoice_type = 'ACCOUNTS_RECEIVABLE')::int as ar,
            (select count(*) from work_tasks where organization_uid = $1)::int as tasks
       from invoices where organization_uid = $1`,
    [org],
  );
  // Fresh statistics so the planner uses the list indexes at once (PGlite never autovacuums).
  await db.execute(sql`set statement_timeout = 0`);
  await db.execute(sql`vacuum (analyze) invoices`);
  await db.execute(sql`vacuum (analyze) parties`);
  if (tasks > 0) await db.execute(sql`vacuum (analyze) work_tasks`);
  return {
    organization_uid: org,
    parties,
    products: 50,
    invoices: (counts?.ap ?? 0) + (counts?.ar ?? 0),
    payable: counts?.ap ?? 0,
    receivable: counts?.ar ?? 0,
    tasks: counts?.tasks ?? 0,
    seconds: Math.round((Date.now() - started) / 100) / 10,
  };
}

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/** Positions 1…`count` in batches of `batch`, each its own transaction without a statement timeout. */
async function inBatches(
  db: Db,
  count: number,
  batch: number,
  insert: (tx: Tx, from: number, to: number) => Promise<void>,
): Promise<void> {
  for (let from = 1; from <= count; from += batch) {
    const to = Math.min(count, from + batch - 1);
    await db.transaction(async (tx) => {
      // Bulk batches run longer than the request-path statement timeout allows.
      await tx.execute(sql`set local statement_timeout = 0`);
      await insert(tx, from, to);
    });
  }
}

/**
 * A big load is far faster into a bare table with the indexes rebuilt once afterwards (sorted builds,
 * and no trigram GIN insertions row by row) than through every index. When `bulk`, the table's
 * non-unique indexes are dropped for the load (and `trigger` disabled), then put back. Their definitions
 * are read from the catalog, so the rebuild always matches the migrations.
 */
async function bulkLoad(
  db: Db,
  table: 'invoices' | 'parties' | 'work_tasks',
  bulk: boolean,
  load: () => Promise<void>,
  extra: { trigger?: string; recount?: string } = {},
): Promise<void> {
  if (!bulk) {
    await load();
    return;
  }
  const indexes = await rawQuery<{ name: string; definition: string }>(
    db,
    `select i.indexname as name, i.indexdef as definition from pg_indexes i
      where i.schemaname = current_schema() and i.tablename = $1
        and i.indexname not in (select conname from pg_constraint where conrelid = $1::regclass)
        -- Unique indexes stay: they keep the load honest (a clashing invoice number is skipped by
        -- ON CONFLICT DO NOTHING instead of breaking the rebuild afterwards).
        and i.indexdef not like 'CREATE UNIQUE INDEX%'`,
    [table],
  );
  await db.transaction(async (tx) => {
    for (const index of indexes) await tx.execute(sql.raw(`drop index if exists "${index.name}"`));
    if (extra.trigger) await tx.execute(sql.raw(`alter table ${table} disable trigger ${extra.trigger}`));
  });
  try {
    await load();
  } finally {
    await restoreAfterBulkLoad(db, table, indexes, extra);
  }
}

/**
 * Puts back what the bulk load took away — each index on its own, so one failure cannot leave the
 * others missing — and (invoices) recounts invoice_counts before the trigger counts again.
 */
async function restoreAfterBulkLoad(
  db: Db,
  table: string,
  indexes: { name: string; definition: string }[],
  extra: { trigger?: string; recount?: string },
): Promise<void> {
  const failures: string[] = [];
  const attempt = async (what: string, statements: string[]) => {
    try {
      await db.transaction(async (tx) => {
        await tx.execute(sql`set local statement_timeout = 0`);
        await tx.execute(sql`set local maintenance_work_mem = '256MB'`);
        for (const statement of statements) await tx.execute(sql.raw(statement));
      });
    } catch (error) {
      failures.push(`${what}: ${(error as Error).message}`);
    }
  };
  for (const index of indexes) {
    await attempt(`index ${index.name}`, [
      index.definition.replace(/^CREATE INDEX /, 'CREATE INDEX IF NOT EXISTS '),
    ]);
  }
  if (extra.trigger) {
    await attempt(`${table} trigger`, [
      `alter table ${table} enable trigger ${extra.trigger}`,
      ...(extra.recount ? extra.recount.split(';').map((s) => s.trim()) : []),
    ]);
  }
  if (failures.length > 0) throw new Error(`Restoring after the bulk load failed: ${failures.join('; ')}`);
}

async function insertInvoices(db: Db, org: string, options: SeedOptions, batch: number, parties: number) {
  const apEvery = options.apRatio; // compared against a deterministic fraction per row
  await inBatches(db, options.invoices, batch, async (tx, from, to) => {
    await tx.execute(
      sql.raw(`
        insert into invoices (
          uid, organization_uid, invoice_type, invoice_number, status, collection_method, currency,
          issue_date, due_date, paid_date, subtotal_cents, discount_cents, tax_cents, total_cents,
          pre_payment_credit_notes_cents, amount_due_cents, amount_paid_cents, amount_remaining_cents,
          client_party_uid, service_provider_party_uid, client_name, vendor_name, vendor_nit,
          stamp_number, received_date, document_type, registration_number, created_at, updated_at)
        select md5('${org}:invoice:' || i)::uuid, '${org}', g.type,
               case when g.type = 'ACCOUNTS_RECEIVABLE' then 'INV-' else 'BILL-' end || lpad(i::text, 7, '0'),
               case when g.type = 'ACCOUNTS_RECEIVABLE'
                    then (array['draft','open','open','open','paid','paid','void','uncollectible'])[1 + i % 8]
                    else (array['received','in_review','approved','registered','paid','paid','rejected'])[1 + i % 7] end,
               case when i % 3 = 0 then 'charge_automatically' else 'send_invoice' end, 'USD',
               g.issued, g.issued + make_interval(days => (15 + (i % 4) * 15)::int),
               case when g.paid then g.issued + make_interval(days => (10 + i % 40)::int) end,
               g.amount, g.discount, g.tax, g.amount - g.discount + g.tax,
               0, g.amount - g.discount + g.tax,
               case when g.paid then g.amount - g.discount + g.tax else 0 end,
               case when g.paid then 0 else g.amount - g.discount + g.tax end,
               md5('${org}:party:' || g.client)::uuid, md5('${org}:party:' || g.vendor)::uuid,
               c.name, v.name, v.tax_id,
               case when g.type = 'ACCOUNTS_PAYABLE' then 'ST-' || lpad((i % 99991)::text, 5, '0') end,
               case when g.type = 'ACCOUNTS_PAYABLE' then g.issued + make_interval(days => (1 + i % 5)::int) end,
               case when g.type = 'ACCOUNTS_PAYABLE' then (array['invoice','credit_note','debit_note'])[1 + i % 3] end,
               case when g.type = 'ACCOUNTS_PAYABLE' and i % 7 = 3 then 'REG-' || lpad(i::text, 7, '0') end,
               g.issued, g.issued
          from generate_series(${from}::bigint, ${to}::bigint) as i
          cross join lateral (
            select case when ((i * 2654435761) % 1000)::float / 1000 < ${apEvery} then 'ACCOUNTS_PAYABLE' else 'ACCOUNTS_RECEIVABLE' end as type,
                   timestamptz '2025-01-01 00:00:00+00' + make_interval(days => ((i * 7919) % 690)::int, secs => ((i * 104729) % 86400)::int) as issued,
                   10000 + ((i * 48271) % 2000000) as amount,
                   case when i % 5 = 0 then 5000 else 0 end as discount,
                   ((10000 + ((i * 48271) % 2000000)) * 19 / 100) as tax,
                   (i % 7 in (4, 5)) as paid,
                   (2 * (1 + i % ${Math.floor(parties / 2)}))::int as client,
                   (2 * (i % ${Math.floor(parties / 2)}) + 1)::int as vendor
          ) g
          join parties c on c.uid = md5('${org}:party:' || g.client)::uuid
          join parties v on v.uid = md5('${org}:party:' || g.vendor)::uuid
        on conflict do nothing`),
    );
  });
}

const TASK_STATUSES = ['todo', 'todo', 'in_progress', 'in_review', 'done', 'done', 'canceled'];
const TASK_PRIORITIES = ['urgent', 'high', 'medium', 'medium', 'low'];

/**
 * Work tasks about receivables: each names a client (a seeded party, read back for its name) and most
 * name an invoice number; every description says how many open invoices the client has. Type `task`,
 * created by `adminUid` (a third also assigned to them), created between 2025-01-01 and late 2026.
 */
async function insertTasks(
  db: Db,
  org: string,
  adminUid: string,
  tasks: number,
  invoices: number,
  parties: number,
  batch: number,
) {
  const clients = Math.floor(parties / 2);
  const invoiceNumber = `'INV-' || lpad((1 + (i * 7919) % ${Math.max(1, invoices)})::text, 7, '0')`;
  await inBatches(db, tasks, batch, async (tx, from, to) => {
    await tx.execute(
      sql.raw(`
      insert into work_tasks (
        uid, organization_uid, type, title, description, status, priority, due_date,
        assignee_type, assignee_user_uid, origin_type, origin_user_uid, created_at, updated_at)
      select md5('${org}:task:' || i)::uuid, '${org}', 'task',
             case i % 6
               when 0 then 'Follow up on ' || ${invoiceNumber} || ' with ' || c.name
               when 1 then 'Call ' || c.name || ' about overdue ' || ${invoiceNumber}
               when 2 then 'Confirm payment of ' || ${invoiceNumber}
               when 3 then 'Send statement of account to ' || c.name
               when 4 then 'Review credit terms for ' || c.name
               else 'Dispute on ' || ${invoiceNumber} || ': check quantities with ' || c.name end,
             c.name || ' has ' || (1 + i % 9) || case when i % 9 = 0 then ' open invoice' else ' open invoices' end
               || '; oldest due '
               || to_char(date '2025-01-15' + ((i * 104729) % 600)::int, 'YYYY-MM-DD')
               || '. Contact: billing' || g.client || '@party' || g.client || '.example.',
             (${sqlArray(TASK_STATUSES)})[1 + i % ${TASK_STATUSES.length}],
             (${sqlArray(TASK_PRIORITIES)})[1 + i % ${TASK_PRIORITIES.length}],
             case when i % 4 <> 0 then date '2025-01-20' + ((i * 7919) % 700)::int end,
             case when i % 3 = 0 then 'user' end, case when i % 3 = 0 then '${adminUid}'::uuid end,
             'user', '${adminUid}'::uuid, g.created, g.created + make_interval(hours => (i % 200)::int)
        from generate_series(${from}::bigint, ${to}::bigint) as i
        cross join lateral (
          select (2 * (1 + (i * 31) % ${clients}))::int as client,
                 timestamptz '2025-01-01 00:00:00+00'
                   + make_interval(days => ((i * 7907) % 690)::int, secs => ((i * 104723) % 86400)::int) as created
        ) g
        join parties c on c.uid = md5('${org}:party:' || g.client)::uuid
      on conflict (uid) do nothing`),
    );
  });
}
