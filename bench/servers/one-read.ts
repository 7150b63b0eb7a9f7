/**
 * Reference 2: a minimal Fastify route doing one primary-key read — what "a route that touches the
 * database once" costs on this machine, per engine.
 *
 *   ENGINE=postgres DATABASE_URL=…   pg Pool (10 clients) with a named prepared statement
 *   ENGINE=pglite                    an in-memory PGlite in this process
 *
 * GET /ref/:id answers the row as JSON; GET /readyz answers 200; GET /info the engine's version.
 */
import Fastify from 'fastify';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { listenAddress, stopOn } from './lifecycle.ts';

interface Row {
  id: number;
  payload: unknown;
}

interface Engine {
  exec(sql: string): Promise<void>;
  byId(id: number): Promise<Row | undefined>;
  version(): Promise<string>;
  close(): Promise<void>;
}

const ROWS = 10_000;
const BY_ID = 'select id, payload from bench_ref where id = $1';
const SETUP = [
  'create table if not exists bench_ref (id int primary key, payload jsonb not null)',
  `insert into bench_ref (id, payload)
     select g, jsonb_build_object('name', 'row ' || g, 'amount_cents', g * 100, 'currency', 'EUR',
                                  'tags', jsonb_build_array('alpha', 'beta'))
     from generate_series(1, ${ROWS}) g
   on conflict (id) do nothing`,
  'vacuum (analyze) bench_ref',
];

async function postgresEngine(url: string): Promise<Engine> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => undefined);
  return {
    exec: async (sql) => {
      await pool.query(sql);
    },
    byId: async (id) => {
      const result = await pool.query<Row>({ name: 'bench_ref_by_id', text: BY_ID, values: [id] });
      return result.rows[0];
    },
    version: async () => (await pool.query<{ v: string }>('select version() as v')).rows[0]?.v ?? 'unknown',
    close: () => pool.end(),
  };
}

async function pgliteEngine(): Promise<Engine> {
  const lite = await PGlite.create();
  return {
    exec: async (sql) => {
      await lite.exec(sql);
    },
    byId: async (id) => (await lite.query<Row>(BY_ID, [id])).rows[0],
    version: async () => (await lite.query<{ v: string }>('select version() as v')).rows[0]?.v ?? 'unknown',
    close: () => lite.close(),
  };
}

async function main() {
  const kind = process.env.ENGINE;
  let engine: Engine;
  if (kind === 'postgres') {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('ENGINE=postgres needs DATABASE_URL');
    engine = await postgresEngine(url);
  } else if (kind === 'pglite') {
    engine = await pgliteEngine();
  } else {
    throw new Error('ENGINE must be postgres or pglite');
  }
  for (const sql of SETUP) await engine.exec(sql);
  const version = await engine.version();

  const app = Fastify({ logger: false });
  app.get<{ Params: { id: string } }>('/ref/:id', async (request, reply) => {
    const id = Number(request.params.id);
    if (!Number.isInteger(id)) return reply.code(400).send({ error: 'id must be an integer' });
    const row = await engine.byId(id);
    if (!row) return reply.code(404).send({ error: 'not found' });
    return row;
  });
  app.get('/readyz', async () => ({ status: 'ok' }));
  app.get('/info', async () => ({ engine: kind, version, rows: ROWS }));

  stopOn(async () => {
    await app.close();
    await engine.close();
  });
  await app.listen(listenAddress());
}

main().catch((error: unknown) => {
  process.stderr.write(
    `one-read reference failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
