import fs from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { createPglite } from '../../src/platform/db/client.ts';

/**
 * The migrated PGlite databases of this test process, handed from one test file to the next.
 *
 * Opening one from the run's dump costs about a second of CPU (unpacking 44 MB into the WebAssembly
 * file system, starting PostgreSQL, linking three extensions), and the suite opened about two hundred:
 * a sixth of its CPU (docs/testing.md#timings). A file's database given back is reused only when it can
 * be put back exactly as the dump made it — its rows emptied, pg-boss's queues removed (their partition
 * tables with them), the session reset — and then checked against the dump's own state: the schema
 * (relations, columns, functions, triggers, policies, constraints, roles, settings, grants), the rows
 * the dump holds and every sequence. A file that changed any of it (a migration test, a dropped trigger,
 * a closed instance) gets its instance closed, and the next file a fresh one.
 */

/** Instances kept beyond the files that hold one at the same time: each is ~150 MB of WebAssembly heap. */
const MAX_IDLE = 2;

interface Pristine {
  schema: string;
  /** Tables the dump holds rows in (the migrations' journal, pg-boss's version), by their contents. */
  contents: Map<string, string>;
  sequences: string;
  /** Every table of ours and pg-boss's that a reset empties. */
  emptied: string[];
}

const idle: PGlite[] = [];
let pristine: Promise<Pristine> | undefined;

const SCHEMA_FINGERPRINT = `
select md5(string_agg(x, E'\\n' order by x)) as fingerprint from (
  select 'n ' || nspname || ' ' || coalesce(nspacl::text, '') as x from pg_namespace
    where nspname not like 'pg_temp_%' and nspname not like 'pg_toast_temp_%'
  union all
  select 'c ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text || ' ' || c.relnatts || ' '
      || c.relrowsecurity::text || c.relforcerowsecurity::text || ' ' || coalesce(c.relacl::text, '')
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_%temp%'
  union all
  select 'a ' || a.attrelid::regclass || ' ' || a.attname || ' ' || a.atttypid::regtype || ' ' || a.attnotnull::text
      || ' ' || a.atthasdef::text || ' ' || a.attisdropped::text
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname in ('public', 'pgboss') and a.attnum > 0
  union all
  select 'd ' || d.adrelid::regclass || ' ' || d.adnum::text || ' ' || pg_get_expr(d.adbin, d.adrelid)
    from pg_attrdef d join pg_class c on c.oid = d.adrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname in ('public', 'pgboss')
  union all
  select 'p ' || p.oid::regprocedure || ' ' || md5(p.prosrc) || ' ' || coalesce(p.proacl::text, '')
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname not in ('pg_catalog', 'information_schema')
  union all
  select 't ' || tgrelid::regclass || ' ' || tgname || ' ' || tgenabled::text || ' ' || tgfoid::regproc
    from pg_trigger
  union all
  select 'y ' || polrelid::regclass || ' ' || polname || ' ' || polcmd::text || ' ' || polroles::text || ' '
      || coalesce(pg_get_expr(polqual, polrelid), '') || ' ' || coalesce(pg_get_expr(polwithcheck, polrelid), '')
    from pg_policy
  union all
  select 'o ' || conrelid::regclass || ' ' || conname || ' ' || contype::text || ' ' || convalidated::text || ' '
      || pg_get_constraintdef(oid)
    from pg_constraint where connamespace in (select oid from pg_namespace where nspname in ('public', 'pgboss'))
  union all
  select 'r ' || rolname || ' ' || rolsuper::text || rolinherit::text || rolcreaterole::text || rolcanlogin::text
      || rolbypassrls::text
    from pg_roles
  union all
  select 'm ' || roleid::regrole || ' ' || member::regrole from pg_auth_members
  union all
  select 's ' || setdatabase::text || ' ' || setrole::text || ' ' || array_to_string(setconfig, ',') from pg_db_role_setting
  union all
  select 'e ' || extname || ' ' || extversion from pg_extension
) fingerprint`;

const SEQUENCES = `
select coalesce(string_agg(schemaname || '.' || sequencename || ' ' || coalesce(last_value::text, '-'), ','
  order by schemaname, sequencename), '') as sequences from pg_sequences`;

const TABLES = `
select format('%I.%I', n.nspname, c.relname) as name
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where c.relkind in ('r', 'p') and not c.relispartition and n.nspname in ('public', 'pgboss')
  order by 1`;

async function one<T>(lite: PGlite, text: string): Promise<T> {
  return (await lite.query<T>(text)).rows[0]!;
}

async function contentsOf(lite: PGlite, table: string): Promise<string> {
  const { contents } = await one<{ contents: string | null }>(
    lite,
    `select md5(string_agg(t::text, E'\\n' order by t::text)) as contents from ${table} t`,
  );
  return contents ?? '';
}

async function stateOf(lite: PGlite): Promise<Pristine> {
  const tables = (await lite.query<{ name: string }>(TABLES)).rows.map((r) => r.name);
  const contents = new Map<string, string>();
  for (const table of tables) {
    const value = await contentsOf(lite, table);
    if (value) contents.set(table, value);
  }
  return {
    schema: (await one<{ fingerprint: string }>(lite, SCHEMA_FINGERPRINT)).fingerprint,
    contents,
    sequences: (await one<{ sequences: string }>(lite, SEQUENCES)).sequences,
    emptied: tables.filter((table) => !contents.has(table)),
  };
}

/** Puts `lite` back as the dump made it; false when it cannot be (it is then closed). */
async function reset(lite: PGlite, expected: Pristine): Promise<boolean> {
  try {
    if (lite.closed) return false;
    // Session state: settings, roles, LISTENs, prepared statements, temporary tables, advisory locks.
    // Refused inside a transaction block, as a file that left one open should be.
    await lite.exec('DISCARD ALL');
    // Each queue's jobs are a partition table of their own, made when the app registered the queue; a
    // queue with jobs cannot be deleted.
    await lite.exec('TRUNCATE pgboss.job');
    await lite.exec('select pgboss.delete_queue(name) from pgboss.queue');
    await lite.exec(`TRUNCATE ${expected.emptied.join(', ')} RESTART IDENTITY CASCADE`);
    for (const [table, value] of expected.contents) {
      if ((await contentsOf(lite, table)) !== value) return false;
    }
    if ((await one<{ sequences: string }>(lite, SEQUENCES)).sequences !== expected.sequences) return false;
    return (await one<{ fingerprint: string }>(lite, SCHEMA_FINGERPRINT)).fingerprint === expected.schema;
  } catch {
    return false;
  }
}

/** A migrated instance: one a previous file gave back, put back as the dump made it, or a fresh one. */
export async function takePglite(dumpPath: string): Promise<PGlite> {
  for (let lite = idle.pop(); lite; lite = idle.pop()) {
    if (await reset(lite, await pristine!)) return lite;
    await lite.close().catch(() => undefined);
  }
  const lite = await createPglite({ loadDataDir: new Blob([fs.readFileSync(dumpPath)]) });
  // The dump's own state, read from the first instance before anything used it.
  pristine ??= stateOf(lite);
  await pristine;
  return lite;
}

/** Gives an instance back when its file is done with it (its Database is closed). */
export async function givePglite(lite: PGlite): Promise<void> {
  if (lite.closed) return;
  if (idle.length < MAX_IDLE) idle.push(lite);
  else await lite.close();
}
