/**
 * EXPLAIN (ANALYZE, BUFFERS) of the statements behind the search scenarios, on the seeded bench
 * database. Each statement is built by Remit's own finders (src/modules/search/search.repository.ts)
 * through a drizzle instance over `pg`, so the SQL and its parameters are exactly what the server sends.
 * Also usable on its own: `node --import tsx bench/lib/search-explain.ts <database url> <org uid> <q>…`.
 */
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import type { Db } from '../../src/platform/db/client.ts';
import * as schema from '../../src/schema.ts';
import { containsPattern } from '../../src/platform/db/text-search.ts';
import * as repo from '../../src/modules/search/search.repository.ts';
import type { Plan } from './explain.ts';

export interface SearchPlanCapture {
  /** Rows of the searched organization and of the others, per table. */
  rows: Record<string, { organization: number; others: number }>;
  database: {
    shared_buffers: string;
    work_mem: string;
    /** Sizes of the searched heaps and their indexes, in bytes. */
    relation_bytes: Record<string, number>;
  };
  plans: Plan[];
}

/** A search the bench runs: `q` in search mode, or null for suggest mode. */
export interface PlannedSearch {
  label: string;
  q: string | null;
  /** Each type's share of `limit` (interface 4.4 rule 3): ceil(12 / 6) = 2 by default. */
  share: number;
  /** context-search: per_page. */
  perPage: number;
}

const TABLES = ['invoices', 'parties', 'work_tasks'];

type Statement = { name: string; role: string; sql: string; params: unknown[] };

/**
 * The statements of one search (per type) and one context search (per entity type, when `q` is set),
 * step by step as Remit runs them (src/modules/search/search.repository.ts `searchQueries`): `first`,
 * then `wide` (with the edge `first` answers), then `all`; suggest mode's `newest`. Every step is listed,
 * also those Remit skips because an earlier one was enough (their `role` says so).
 */
export async function searchStatements(
  db: Db,
  pool: pg.Pool,
  organizationUid: string,
  search: PlannedSearch,
): Promise<Statement[]> {
  const pattern = search.q === null ? null : containsPattern(search.q);
  const mode = search.q === null ? 'suggest' : `q=${search.q}`;
  const out: Statement[] = [];
  const add = async (
    what: string,
    route: string,
    source: Parameters<typeof repo.searchQueries>[1],
    limit: number,
  ) => {
    const steps = repo.searchQueries(db, source, organizationUid, pattern, limit);
    if (steps.newest) {
      out.push({
        name: `${search.label}: ${what}, newest`,
        role: `${route} ${mode}, limit ${limit}: the newest ${limit} rows (one statement)`,
        ...steps.newest.toSQL(),
      });
      return;
    }
    const skipped = (yes: boolean) => (yes ? ' — not run by Remit here: an earlier step was enough' : '');
    const first = steps.first.toSQL();
    const answer = (
      await pool.query<{ rows: number; keyed: number; edge: string | null; uid: string | null }>(
        first.sql,
        first.params,
      )
    ).rows;
    const found = answer.filter((r) => r.uid !== null).length;
    const rows = answer[0]?.rows ?? 0;
    const edge = answer[0]?.edge ?? null;
    const recentRows = repo.recentWindow(limit);
    const wideRows = repo.wideWindow(limit);
    out.push({
      name: `${search.label}: ${what}, first`,
      role: `${route} ${mode}, limit ${limit}: step 1, the newest ${recentRows} rows filtered (${found} found), beside the size (${rows}) and edge (${edge ?? 'none'}) of the newest ${wideRows.toLocaleString('en-US')}`,
      ...first,
    });
    let done = found >= limit || rows < recentRows;
    if (edge !== null) {
      const wide = steps.wide(edge).toSQL();
      const wideFound = (await pool.query(wide.sql, wide.params)).rowCount ?? 0;
      out.push({
        name: `${search.label}: ${what}, wide`,
        role: `step 2: the matches at or after the edge (${wideFound} found)${skipped(done)}`,
        ...wide,
      });
      done ||= wideFound >= limit || (rows < wideRows && answer[0]?.keyed === rows);
    }
    out.push({
      name: `${search.label}: ${what}, all`,
      role: `step 3: every match through the trigram indexes, sorted${skipped(done)}`,
      ...steps.all.toSQL(),
    });
  };
  for (const [type, source] of Object.entries(repo.SEARCH_SOURCES)) {
    await add(`search ${type}`, 'GET /api/search', source, search.share);
  }
  if (pattern !== null) {
    for (const [type, source] of Object.entries(repo.CONTEXT_SOURCES)) {
      await add(`context-search ${type}`, 'GET /api/work-tasks/context-search', source, search.perPage);
    }
  }
  return out;
}

async function explain(client: pg.Pool, statement: Statement): Promise<Plan> {
  // Once to warm this connection's catalog caches (and the buffers), then the plan that is kept.
  const text = `explain (analyze, buffers) ${statement.sql}`;
  await client.query(text, statement.params);
  const result = await client.query<{ 'QUERY PLAN': string }>(text, statement.params);
  const plan = result.rows.map((r) => r['QUERY PLAN']);
  const ms = (label: string) => {
    const line = plan.find((l) => l.startsWith(`${label} Time:`));
    return line ? Number(/([\d.]+) ms/.exec(line)?.[1]) : null;
  };
  return { ...statement, plan, execution_ms: ms('Execution'), planning_ms: ms('Planning') };
}

export async function captureSearchPlans(
  databaseUrl: string,
  organizationUid: string,
  searches: PlannedSearch[],
): Promise<SearchPlanCapture> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, connectionTimeoutMillis: 5_000 });
  pool.on('error', () => undefined);
  try {
    const db = drizzle(pool, { schema }) as unknown as Db;
    const plans: Plan[] = [];
    for (const search of searches) {
      for (const statement of await searchStatements(db, pool, organizationUid, search)) {
        plans.push(await explain(pool, statement));
      }
    }
    const rows: SearchPlanCapture['rows'] = {};
    for (const table of TABLES) {
      const counted = await pool.query<{ mine: number; others: number }>(
        `select count(*) filter (where organization_uid = $1)::int as mine,
                count(*) filter (where organization_uid <> $1)::int as others from ${table}`,
        [organizationUid],
      );
      rows[table] = { organization: counted.rows[0]?.mine ?? 0, others: counted.rows[0]?.others ?? 0 };
    }
    const settings = await pool.query<{ sb: string; wm: string }>(
      "select current_setting('shared_buffers') as sb, current_setting('work_mem') as wm",
    );
    const sizes = await pool.query<{ name: string; bytes: string }>(
      `select c.relname as name, pg_relation_size(c.oid)::text as bytes
         from pg_class c
        where c.oid = any(select unnest(array[$1::text[]])::regclass)
           or c.oid in (select indexrelid from pg_index where indrelid = any(select unnest($1::text[])::regclass))
        order by 1`,
      [TABLES],
    );
    return {
      rows,
      database: {
        shared_buffers: settings.rows[0]?.sb ?? '?',
        work_mem: settings.rows[0]?.wm ?? '?',
        relation_bytes: Object.fromEntries(sizes.rows.map((r) => [r.name, Number(r.bytes)])),
      },
      plans,
    };
  } finally {
    await pool.end();
  }
}

// Standalone: print the plans of the given queries ("-" for suggest mode).
if (import.meta.url === `file://${process.argv[1]}`) {
  const [url, org, ...qs] = process.argv.slice(2);
  if (!url || !org || qs.length === 0) {
    process.stderr.write('usage: search-explain.ts <database url> <organization uid> <q|-> …\n');
    process.exit(2);
  }
  const capture = await captureSearchPlans(
    url,
    org,
    qs.map((q) => ({ label: q, q: q === '-' ? null : q, share: 2, perPage: 10 })),
  );
  for (const plan of capture.plans) {
    process.stdout.write(
      `\n== ${plan.name} (${plan.execution_ms} ms + planning ${plan.planning_ms} ms)\n${plan.sql}\n${JSON.stringify(plan.params)}\n${plan.plan.join('\n')}\n`,
    );
  }
  process.stdout.write(`\n${JSON.stringify({ rows: capture.rows, database: capture.database }, null, 2)}\n`);
}
