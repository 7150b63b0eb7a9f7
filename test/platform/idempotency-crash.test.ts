import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, rawQuery } from '../../src/platform/db/client.ts';
import { runCli } from '../helpers/cli.ts';
import { startServer, type ServerProcess } from '../helpers/processes.ts';
import { processDatabase } from '../helpers/test-database.ts';

/**
 * Idempotent payments through kill -9. Clients each record a sequence of payments, every one under its
 * own Idempotency-Key, and retry (on a refused or reset connection, a 5xx or a 409 for a key still in
 * use) until they get an answer; meanwhile the server is killed with SIGKILL at random moments and
 * started again. Afterwards exactly one payment exists per key, and every answer for a key — the first
 * one and a replay asked for at the end — is the same bytes. With the claim, the handler's writes and
 * the stored answer in three commits, a kill between them left a claim that answered 409 for 120 s and
 * then let the payment run a second time.
 */
const CLIENTS = 6;
const PAYMENTS_PER_CLIENT = 12;
const MAX_KILLS = 4;

interface Answer {
  status: number;
  body: string;
}

describe('idempotent payments under kill -9', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it(`${CLIENTS} clients × ${PAYMENTS_PER_CLIENT} keyed payments, up to ${MAX_KILLS} SIGKILLs: one payment per key, identical answers`, async () => {
    // A migrated database of its own: the server restarts below are the processes under test.
    const processDb = await processDatabase('remit-crash-');
    cleanups.push(() => processDb.drop());
    const env: Record<string, string> = { RATE_LIMIT_MAX: '100000', ...processDb.env };
    const init = await runCli(['init', '--org', 'Acme', '--email', 'admin@acme.test', '--json'], env);
    expect(init.code, init.stderr).toBe(0);
    const apiKey = (JSON.parse(init.stdout) as { api_key: string }).api_key;

    let server: ServerProcess | undefined = await startServer(env);
    cleanups.push(() => void server?.child.kill('SIGKILL'));
    const post = (url: string, body: unknown, key?: string) =>
      fetch(`${server!.url}${url}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          ...(key ? { 'idempotency-key': key } : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
    const created = await post('/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: 'CRASH-1',
      status: 'open',
      currency: 'USD',
      tax_cents: 100_000_000,
    });
    const invoiceBody = (await created.json()) as { data: { uid: string } };
    expect(created.status, JSON.stringify(invoiceBody)).toBe(201);
    const invoiceUid = invoiceBody.data.uid;

    // Every payment has its own amount, so the stored rows tell which keys ran (and how often).
    const amountOf = (client: number, n: number) => 1 + client * PAYMENTS_PER_CLIENT + n;
    const keyOf = (client: number, n: number) => `crash-pay-${client}-${n}`;
    const answers = new Map<string, Answer>();
    let running = true;
    const statuses = new Map<string, number>();
    // Up to four restarts of an embedded server on a busy machine (two suites side by side) can take
    // more than a minute together; the test's own timeout still bounds the whole run.
    const deadline = Date.now() + 150_000;

    const pay = async (client: number, n: number): Promise<Answer> => {
      let last = '';
      for (;;) {
        if (Date.now() > deadline)
          throw new Error(
            `no answer for ${keyOf(client, n)} in time; last: ${last}; ${JSON.stringify(Object.fromEntries(statuses))}`,
          );
        try {
          const res = await post(
            `/api/invoices/${invoiceUid}/payments`,
            { amount_cents: amountOf(client, n), paid_at: '2026-11-01T00:00:00Z' },
            keyOf(client, n),
          );
          const body = await res.text();
          const replay = res.headers.get('idempotent-replayed') === 'true' ? ' replayed' : '';
          statuses.set(`${res.status}${replay}`, (statuses.get(`${res.status}${replay}`) ?? 0) + 1);
          last = `${res.status} ${body}`;
          if (res.status < 500 && !body.includes('idempotency_key_in_use'))
            return { status: res.status, body };
        } catch (error) {
          // refused or reset: the server is down or was killed mid-answer
          last = String(error);
          const cause = String((error as { cause?: { code?: string } }).cause?.code ?? error);
          statuses.set(cause, (statuses.get(cause) ?? 0) + 1);
        }
        await new Promise((r) => setTimeout(r, 20 + Math.random() * 30));
      }
    };
    const clients = Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = 0; n < PAYMENTS_PER_CLIENT; n++) answers.set(keyOf(client, n), await pay(client, n));
    });
    const allDone = Promise.all(clients).finally(() => (running = false));

    let kills = 0;
    while (running && kills < MAX_KILLS) {
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 250));
      if (!running) break;
      server.child.kill('SIGKILL');
      await server.exited;
      kills += 1;
      server = await startServer(env);
    }
    await allDone;

    // Asked once more, each key answers with exactly what it answered the first time.
    for (let client = 0; client < CLIENTS; client++) {
      for (let n = 0; n < PAYMENTS_PER_CLIENT; n++) {
        const first = answers.get(keyOf(client, n))!;
        expect(first.status, first.body).toBe(201);
        const again = await post(
          `/api/invoices/${invoiceUid}/payments`,
          { amount_cents: amountOf(client, n), paid_at: '2026-11-01T00:00:00Z' },
          keyOf(client, n),
        );
        expect(again.headers.get('idempotent-replayed')).toBe('true');
        expect({ status: again.status, body: await again.text() }).toEqual(first);
      }
    }
    server.child.kill('SIGTERM');
    await server.exited;
    server = undefined;

    const database = await openDatabase({
      ...(env.DATABASE_URL
        ? { databaseUrl: env.DATABASE_URL }
        : { dataDir: path.join(env.DATA_DIR!, 'pglite') }),
      statementTimeoutMs: 10_000,
    });
    try {
      const rows = await rawQuery<{ amount_cents: number }>(
        database.db,
        `select amount_cents from invoice_payments where invoice_uid = $1 order by amount_cents`,
        [invoiceUid],
      );
      const expected = Array.from({ length: CLIENTS * PAYMENTS_PER_CLIENT }, (_, i) => i + 1);
      expect(rows.map((r) => r.amount_cents)).toEqual(expected);
    } finally {
      await database.close();
    }
    expect(kills).toBeGreaterThan(0);
    console.log({ kills, statuses: Object.fromEntries(statuses) });
  }, 300_000);
});
