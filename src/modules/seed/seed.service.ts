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
  batchSize?: number;
  /** From this many invoices on, indexes are rebuilt after the load instead of kept (default 50,000). */
  bulkThreshold?: number;
}

export interface SeedResult {
  organization_uid: string;
  parties: number;
  products: number;
  invoices: number;
  payable: number;
  receivable: number;
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
 * Demo and benchmark data, deterministic for a given organization and count: the same call always
 * writes the same rows (uids derive from md5 of the organization, kind and position). Invoices are
 * generated inside PostgreSQL in batches (INSERT … SELECT over generate_series), so a million rows
 * take seconds, not a million round trips.
 */
export async function seedOrganization(db: Db, options: SeedOptions): Promise<SeedResult> {
  const started = Date.now();
  const org = options.organizationUid;
  const [exists] = await rawQuery<{ one: number }>(db, 'select 1 as one from organizations where uid = $1', [
    org,
  ]);
  if (!exists) throw notFound('Organization');
  const parties = Math.max(2, options.parties);
  const words = `array[${VENDOR_WORDS.map((w) => `'${w}'`).join(',')}]`;
  const kinds = `array[${VENDOR_KINDS.map((w) => `'${w}'`).join(',')}]`;
  const cities = `array[${CITIES.map((w) => `'${w}'`).join(',')}]`;

  await db.transaction(async (tx) => {
    await tx.execute(sql`set local statement_timeout = 0`);
    // Parties: even positions are clients, odd ones vendors.
    await tx.execute(
      sql.raw(`
      insert into parties (uid, organization_uid, name, role, address, tax_id, created_at, updated_at)
      select md5('${org}:party:' || i)::uuid, '${org}',
             (${words})[1 + i % ${VENDOR_WORDS.length}] || ' ' || (${kinds})[1 + (i / ${VENDOR_WORDS.length}) % ${VENDOR_KINDS.length}] || ' ' || i,
             case when i % 2 = 0 then 'client' else 'vendor' end,
             (10 + i % 90) || ' Market Street, ' || (${cities})[1 + i % ${CITIES.length}],
             '900' || lpad(i::text, 6, '0') || '-' || (i % 10),
             now() - make_interval(days => i % 700), now() - make_interval(days => i % 365)
        from generate_series(1, ${parties}) as i
      on conflict (uid) do nothing`),
    );
    await tx.execute(
      sql.raw(`
      insert into party_contacts (uid, organization_uid, party_uid, name, title, email, phone)
      select md5('${org}:contact:' || i)::uuid, '${org}', md5('${org}:party:' || i)::uuid,
             'Contact ' || i, 'Accounts', 'billing' || i || '@party' || i || '.example', '+1 555 ' || lpad(i::text, 4, '0')
        from generate_series(1, ${parties}) as i
      on conflict do nothing`),
    );
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

  const batch = options.batchSize ?? 100_000;
  // A big load is far faster into a bare table with the indexes rebuilt once afterwards (sorted builds)
  // than through some 30 indexes row by row. Their definitions are read from the catalog, so the
  // rebuild always matches the migrations.
  const bulk = options.invoices >= (options.bulkThreshold ?? 50_000);
  const indexes = bulk
    ? await rawQuery<{ name: string; definition: string }>(
        db,
        `select i.indexname as name, i.indexdef as definition from pg_indexes i
          where i.schemaname = current_schema() and i.tablename = 'invoices'
            and i.indexname not in (select conname from pg_constraint where conrelid = 'invoices'::regclass)
            -- Unique indexes stay: they keep the load honest (a clashing invoice number is skipped by
            -- ON CONFLICT DO NOTHING instead of breaking the rebuild afterwards).
            and i.indexdef not like 'CREATE UNIQUE INDEX%'`,
      )
    : [];
  if (bulk) {
    await db.transaction(async (tx) => {
      for (const index of indexes) await tx.execute(sql.raw(`drop index if exists "${index.name}"`));
      // Counted once afterwards instead of a million increments of the same counter rows.
      await tx.execute(sql`alter table invoices disable trigger invoices_count_insert_delete`);
    });
  }
  try {
    await insertInvoices(db, org, options, batch, parties);
  } finally {
    if (bulk) await restoreAfterBulkLoad(db, indexes);
  }
  const [counts] = await rawQuery<{ ap: number; ar: number }>(
    db,
    `select count(*) filter (where invoice_type = 'ACCOUNTS_PAYABLE')::int as ap,
            count(*) filter (where invoice_type = 'ACCOUNTS_RECEIVABLE')::int as ar
       from invoices where organization_uid = $1`,
    [org],
  );
  // Fresh statistics so the planner uses the list indexes at once (PGlite never autovacuums).
  await db.execute(sql`set statement_timeout = 0`);
  await db.execute(sql`vacuum (analyze) invoices`);
  await db.execute(sql`vacuum (analyze) parties`);
  return {
    organization_uid: org,
    parties,
    products: 50,
    invoices: (counts?.ap ?? 0) + (counts?.ar ?? 0),
    payable: counts?.ap ?? 0,
    receivable: counts?.ar ?? 0,
    seconds: Math.round((Date.now() - started) / 100) / 10,
  };
}

/**
 * Puts back what the bulk load took away — each index on its own, so one failure cannot leave the
 * others missing — and recounts invoice_counts before the trigger counts again.
 */
async function restoreAfterBulkLoad(db: Db, indexes: { name: string; definition: string }[]): Promise<void> {
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
  await attempt('invoice counts', [
    'alter table invoices enable trigger invoices_count_insert_delete',
    'delete from invoice_counts',
    `insert into invoice_counts (organization_uid, invoice_type, status, n)
       select organization_uid, invoice_type, status, count(*) from invoices group by 1, 2, 3`,
  ]);
  if (failures.length > 0) throw new Error(`Restoring after the bulk load failed: ${failures.join('; ')}`);
}

async function insertInvoices(db: Db, org: string, options: SeedOptions, batch: number, parties: number) {
  const apEvery = options.apRatio; // compared against a deterministic fraction per row
  for (let from = 1; from <= options.invoices; from += batch) {
    const to = Math.min(options.invoices, from + batch - 1);
    await db.transaction(async (tx) => {
      // Bulk batches run longer than the request-path statement timeout allows.
      await tx.execute(sql`set local statement_timeout = 0`);
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
}
