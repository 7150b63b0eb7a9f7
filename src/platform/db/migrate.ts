import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { Database } from './client.ts';
import { SCHEMA_LOCK_KEY } from './schema-lock.ts';

/**
 * `migrations/` at the package's root: found by walking up to the directory holding package.json, so
 * it is the same from the source (src/platform/db/) and from the bundle (dist/, one chunk file).
 */
export const MIGRATIONS_DIR = path.join(
  packageRoot(path.dirname(fileURLToPath(import.meta.url))),
  'migrations',
);

function packageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

interface Journal {
  entries: { idx: number; tag: string }[];
}

export interface Migration {
  tag: string;
  statements: string[];
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const journal = JSON.parse(fs.readFileSync(path.join(dir, 'meta/_journal.json'), 'utf8')) as Journal;
  return [...journal.entries]
    .sort((a, b) => a.idx - b.idx)
    .map(({ tag }) => ({
      tag,
      statements: fs
        .readFileSync(path.join(dir, `${tag}.sql`), 'utf8')
        .split('--> statement-breakpoint')
        .map((s) => s.trim())
        .filter((s) => s.length > 0),
    }));
}

/**
 * Applies the migrations drizzle-kit generated, in journal order, all pending ones in one transaction
 * (a failing migration leaves the database exactly as it was), on either engine. An advisory lock makes concurrent starters (several API or worker processes) wait
 * for one another instead of racing.
 */
export async function migrate(database: Database, dir = MIGRATIONS_DIR): Promise<string[]> {
  const { db } = database;
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    // Migrations are not normal traffic: no statement timeout (an index build on a large table may take
    // minutes), but a bounded wait for table locks, so a migration blocked by a long transaction fails
    // with a clear error instead of queueing every request behind it. The advisory lock is taken first,
    // without a lock timeout: a second starter waits for the first to finish.
    await tx.execute(sql`set local statement_timeout = 0`);
    await tx.execute(sql`select pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`);
    await tx.execute(sql`set local lock_timeout = '10s'`);
    await tx.execute(sql`create table if not exists remit_migrations (
      tag text primary key,
      applied_at timestamptz not null default now()
    )`);
    const done = await tx.execute(sql`select tag from remit_migrations`);
    const doneTags = new Set((done as { rows: { tag: string }[] }).rows.map((r) => r.tag));
    for (const migration of readMigrations(dir)) {
      if (doneTags.has(migration.tag)) continue;
      for (const statement of migration.statements) {
        try {
          await tx.execute(sql.raw(statement));
        } catch (error) {
          throw migrationError(migration.tag, error);
        }
      }
      await tx.execute(sql`insert into remit_migrations (tag) values (${migration.tag})`);
      applied.push(migration.tag);
    }
  });
  return applied;
}

/**
 * The database's own words (and its hint, which says what to do) rather than the driver's wrapper,
 * whose message starts with the whole failed statement.
 */
function migrationError(tag: string, error: unknown): Error {
  const cause = ((error as { cause?: unknown }).cause ?? error) as { message?: string; hint?: string };
  const hint = cause.hint ? ` Hint: ${cause.hint}` : '';
  return new Error(`Migration ${tag} failed: ${cause.message ?? String(error)}.${hint}`, { cause: error });
}
