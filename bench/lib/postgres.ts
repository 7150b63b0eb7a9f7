import crypto from 'node:crypto';
import pg from 'pg';
import { onCleanup } from './cleanup.ts';

export const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface ThrowawayDatabase {
  name: string;
  url: string;
  serverVersion: string;
  /** `select version()` */
  versionString: string;
  drop(): Promise<void>;
}

/** The URL with its password hidden (for output and the results file). */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}

async function withAdmin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates remit_bench_<random> on the admin URL's server; it is dropped at cleanup. */
export async function createThrowawayDatabase(adminUrl: string): Promise<ThrowawayDatabase> {
  const name = `remit_bench_${crypto.randomBytes(5).toString('hex')}`;
  const { versionString, serverVersion } = await withAdmin(adminUrl, async (client) => {
    const version = await client.query<{ version: string; server_version: string }>(
      'select version() as version, current_setting($1) as server_version',
      ['server_version'],
    );
    await client.query(`create database "${name}"`);
    return {
      versionString: version.rows[0]?.version ?? 'unknown',
      serverVersion: version.rows[0]?.server_version ?? 'unknown',
    };
  });
  const drop = onCleanup(`drop database ${name}`, () =>
    withAdmin(adminUrl, async (client) => {
      await client.query(`drop database if exists "${name}" with (force)`);
    }),
  );
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), serverVersion, versionString, drop };
}
