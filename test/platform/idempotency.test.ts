import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { issueApiKey } from '../../src/modules/api-keys/api-keys.service.ts';
import { afterCommit } from '../../src/platform/db/request-scope.ts';
import { AppError } from '../../src/platform/http/errors.ts';
import { idempotencyKeys } from '../../src/platform/http/idempotency.tables.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testDatabaseUrl } from '../helpers/test-database.ts';
import { call, expectErrorBody, type CallResult } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

let t: TestApp;
let p: Principals;

// Test routes: how often each ran, a route that fails once, and one that waits for a gate.
let runs = 0;
const effects: string[] = [];
let failNext = false;
let gate: { entered: () => void; release: Promise<void> } | null = null;

beforeAll(async () => {
  t = await createTestApp({
    beforeReady: (app, deps) => {
      // Writes a row, queues an effect for after commit, then answers as the body says.
      app.post<{ Body: { mark: string; answer: number; deferredWrite?: boolean } }>(
        '/api/test-unit',
        { config: { idempotency: 'transaction' } },
        async (request, reply) => {
          const { db } = deps.database;
          await db.execute(sql`insert into test_unit_marks (mark) values (${request.body.mark})`);
          await afterCommit(() => effects.push(request.body.mark));
          const status = request.body.answer;
          if (status >= 500) throw new Error('failed after writing');
          if (status >= 400) throw new AppError('invalid_state', 'refused after writing');
          return reply.code(status).send({ status: 'success', status_code: status, message: 'ok', data: {} });
        },
      );
      app.post<{ Body: { mark: string } }>(
        '/api/test-deferred-plain-write',
        { config: { idempotency: 'deferred' } },
        async (request, reply) => {
          await deps.database.db.insert(idempotencyKeys).values([]);
          return reply.code(201).send({ status: 'success', status_code: 201, message: 'ok', data: {} });
        },
      );
      app.post('/api/test-counter', async (request, reply) => {
        runs += 1;
        if (failNext) {
          failNext = false;
          throw new Error('transient failure');
        }
        if (gate) {
          const g = gate;
          g.entered();
          await g.release;
        }
        return reply
          .code(201)
          .send({ status: 'success', status_code: 201, message: 'ok', data: { run: runs } });
      });
      // A route that waits (as for an outside service) before it writes: no transaction is open meanwhile.
      app.post('/api/test-deferred', { config: { idempotency: 'deferred' } }, async (_request, reply) => {
        runs += 1;
        if (gate) {
          const g = gate;
          g.entered();
          await g.release;
        }
        const run = runs;
        await deps.database.db.transaction(async (tx) => {
          await tx.execute(sql`select 1`);
        });
        return reply.code(201).send({ status: 'success', status_code: 201, message: 'ok', data: { run } });
      });
    },
  });
  p = await createPrincipals(t);
  await t.db.execute(sql`create table test_unit_marks (mark text not null)`);
});
afterAll(async () => t?.close());

const idem = () => `idem-${crypto.randomUUID()}`;

const createKey = (body: unknown, idempotencyKey: string, key = p.orgA.admin.key) =>
  call(t.app, 'POST', '/api/api-keys', { key, body, headers: { 'idempotency-key': idempotencyKey } });

const counter = (idempotencyKey: string, body: unknown = { a: 1 }, key = p.orgA.admin.key) =>
  call(t.app, 'POST', '/api/test-counter', { key, body, headers: { 'idempotency-key': idempotencyKey } });

async function keyCount(): Promise<number> {
  const res = await call(t.app, 'GET', '/api/api-keys', { key: p.orgA.admin.key, query: { per_page: 1 } });
  expect(res.status).toBe(200);
  return res.body.data._meta.total_items as number;
}

const replayed = (res: CallResult) => res.headers['idempotent-replayed'];

async function storedRows(idempotencyKey: string) {
  const result = await t.db.execute(
    sql`select api_key_uid, method, path, request_hash, state, response_status, response_body
          from idempotency_keys where idempotency_key = ${idempotencyKey}`,
  );
  return (
    result as unknown as {
      rows: {
        api_key_uid: string;
        method: string;
        path: string;
        request_hash: string;
        state: string;
        response_status: number | null;
        response_body: string | null;
      }[];
    }
  ).rows;
}

describe('same key, same body → the first response replayed', () => {
  it('replays status and body, with Idempotent-Replayed: true, and runs the handler once', async () => {
    const k = idem();
    const body = { name: 'Idempotent', scopes: ['invoices:read', 'email:read'], expires_in_days: 7 };
    const before = await keyCount();
    const first = await createKey(body, k);
    expect(first.status).toBe(200);
    expect(replayed(first)).toBeUndefined();
    expect(await keyCount()).toBe(before + 1);

    const again = await createKey(body, k);
    expect(again.status).toBe(first.status);
    expect(replayed(again)).toBe('true');
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.headers['ratelimit-limit']).toEqual(expect.any(String));
    expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    const { key: _plaintext, ...dataWithoutKey } = first.body.data;
    expect(again.body).toEqual({ ...first.body, data: dataWithoutKey });

    // Keys in another order (top level and nested values unchanged) are the same body.
    const reordered = { expires_in_days: 7, scopes: ['invoices:read', 'email:read'], name: 'Idempotent' };
    const third = await createKey(reordered, k);
    expect(third.status).toBe(200);
    expect(replayed(third)).toBe('true');
    expect(third.body.data.uid).toBe(first.body.data.uid);
    expect(await keyCount()).toBe(before + 1);
  });

  it('replays the status as first answered (201), whatever the handler would answer now', async () => {
    const k = idem();
    const first = await counter(k, { x: { b: 2, a: 1 } });
    expect(first.status).toBe(201);
    const runsAfterFirst = runs;
    const again = await counter(k, { x: { a: 1, b: 2 } });
    expect(again.status).toBe(201);
    expect(replayed(again)).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(again.raw).toBe(first.raw);
    expect(runs).toBe(runsAfterFirst);
  });

  it('an array in another order is a different body', async () => {
    const k = idem();
    expect((await counter(k, { list: [1, 2] })).status).toBe(201);
    expectErrorBody(await counter(k, { list: [2, 1] }), 422, 'idempotency_key_reused');
  });

  it('without the header nothing is kept: each POST runs', async () => {
    const before = await keyCount();
    const body = { name: 'No idempotency' };
    const a = await call(t.app, 'POST', '/api/api-keys', { key: p.orgA.admin.key, body });
    const b = await call(t.app, 'POST', '/api/api-keys', { key: p.orgA.admin.key, body });
    expect(a.body.data.uid).not.toBe(b.body.data.uid);
    expect(await keyCount()).toBe(before + 2);
  });
});

describe('same key, different body', () => {
  it('422 idempotency_key_reused, and nothing runs', async () => {
    const k = idem();
    expect((await createKey({ name: 'First body' }, k)).status).toBe(200);
    const before = await keyCount();
    expectErrorBody(await createKey({ name: 'Second body' }, k), 422, 'idempotency_key_reused');
    expectErrorBody(await createKey({ name: 'First body', scopes: [] }, k), 422, 'idempotency_key_reused');
    expect(await keyCount()).toBe(before);
    // The original is still replayable.
    expect(replayed(await createKey({ name: 'First body' }, k))).toBe('true');
  });
});

describe('while the first request is still running → 409', () => {
  /** Sends `path` with key `k`, holds it inside its handler, and checks a twin sent meanwhile. */
  async function twinWhileRunning(path: string) {
    const k = idem();
    const send = () =>
      call(t.app, 'POST', path, { key: p.orgA.admin.key, body: { a: 1 }, headers: { 'idempotency-key': k } });
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    gate = { entered, release: new Promise<void>((resolve) => (release = resolve)) };
    try {
      const pending = send();
      // Wait until the first request is inside its handler (fail fast if it answered without getting there).
      await Promise.race([
        inHandler,
        pending.then((r) => {
          throw new Error(`the first request answered before reaching its handler: ${r.status} ${r.raw}`);
        }),
      ]);
      const runsWhileRunning = runs;
      const second = await send();
      expectErrorBody(second, 409, 'idempotency_key_in_use');
      expect(runs).toBe(runsWhileRunning);
      release();
      const first = await pending;
      expect(first.status).toBe(201);
      gate = null;
      const third = await send();
      expect(replayed(third)).toBe('true');
      expect(third.body).toEqual(first.body);
    } finally {
      gate = null;
      release?.();
    }
  }

  it('a twin of a request waiting before its transaction: 409 idempotency_key_in_use, then the replay', async () => {
    await twinWhileRunning('/api/test-deferred');
  });

  // On the embedded database the first request's transaction holds the only connection, so its twin
  // cannot even be authenticated until it commits (and then gets the replay).
  it.runIf(testDatabaseUrl !== undefined)(
    'PostgreSQL: a twin of a request inside its transaction is 409 at once, then replayed',
    async () => {
      await twinWhileRunning('/api/test-counter');
    },
  );

  it('a claim row of the earlier three-commit design is not an answer: the request runs and replaces it', async () => {
    const body = { name: 'In flight' };
    const done = idem();
    expect((await createKey(body, done)).status).toBe(200);
    const [row] = await storedRows(done);
    expect(row).toMatchObject({ state: 'done', method: 'POST', path: '/api/api-keys', response_status: 200 });

    const k = idem();
    await t.db.execute(sql`
      insert into idempotency_keys
        (organization_uid, api_key_uid, method, path, idempotency_key, request_hash, state, expires_at)
      values (${p.orgA.uid}, ${row!.api_key_uid}, 'POST', '/api/api-keys', ${k}, ${row!.request_hash},
              'in_flight', now() + interval '24 hours')`);
    const before = await keyCount();
    const retried = await createKey(body, k);
    expect(retried.status).toBe(200);
    expect(replayed(retried)).toBeUndefined();
    expect(retried.body.data.key).toEqual(expect.any(String));
    expect(await keyCount()).toBe(before + 1);
    const [stored] = await storedRows(k);
    expect(stored).toMatchObject({ state: 'done', response_status: 200 });
    expect((await createKey(body, k)).body.data.uid).toBe(retried.body.data.uid);
  });

  it('a kept response older than 24 h is not replayed: the request runs again', async () => {
    const k = idem();
    const body = { name: 'Expiring' };
    const first = await createKey(body, k);
    await t.db.execute(
      sql`update idempotency_keys set expires_at = now() - interval '1 second' where idempotency_key = ${k}`,
    );
    const second = await createKey(body, k);
    expect(second.status).toBe(200);
    expect(replayed(second)).toBeUndefined();
    expect(second.body.data.uid).not.toBe(first.body.data.uid);
  });
});

describe('the plaintext API key is never replayed', () => {
  it('first response has key; the replay has the same uid and no key, nor does the stored row', async () => {
    const k = idem();
    const first = await createKey({ name: 'Secret once' }, k);
    const plaintext = first.body.data.key as string;
    expect(plaintext).toMatch(/^rk_live_/);
    const replay = await createKey({ name: 'Secret once' }, k);
    expect(replayed(replay)).toBe('true');
    expect(replay.body.data.uid).toBe(first.body.data.uid);
    expect(replay.body.data.key_snippet).toBe(first.body.data.key_snippet);
    expect('key' in replay.body.data).toBe(false);
    expect(replay.raw).not.toContain(plaintext);
    const [row] = await storedRows(k);
    expect(row!.response_body).not.toContain(plaintext);
    expect(row!.response_body).toContain(first.body.data.uid);
  });
});

describe('scope of an Idempotency-Key', () => {
  it('per API key: another key of the same user with the same Idempotency-Key is not a replay', async () => {
    const k = idem();
    const body = { name: 'Per key' };
    const { key: otherKey } = await issueApiKey(t.db, t.config.apiKeyPepper, {
      organizationUid: p.orgA.uid,
      userUid: p.orgA.admin.userUid,
      name: 'second key of the admin',
      scopes: null,
    });
    const a = await createKey(body, k);
    const b = await createKey(body, k, otherKey);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(replayed(b)).toBeUndefined();
    expect(b.body.data.uid).not.toBe(a.body.data.uid);
    expect(b.body.data.key).toEqual(expect.any(String));
    // Each key replays its own.
    expect((await createKey(body, k, otherKey)).body.data.uid).toBe(b.body.data.uid);
    expect((await createKey(body, k)).body.data.uid).toBe(a.body.data.uid);
    // Another organization's caller with the same header: its own request, in its own organization.
    const c = await createKey(body, k, p.orgB.admin.key);
    expect(replayed(c)).toBeUndefined();
    expect(c.body.data.organization_uid).toBe(p.orgB.uid);
    expect(await storedRows(k)).toHaveLength(3);
  });

  it('the same route spelled with a trailing slash or a query string is the same request', async () => {
    const k = idem();
    const body = { name: 'Spelling' };
    const first = await createKey(body, k);
    const before = await keyCount();
    for (const url of ['/api/api-keys/', `/api/api-keys?organization_uid=${p.orgA.uid}`]) {
      const res = await call(t.app, 'POST', url, {
        key: p.orgA.admin.key,
        body,
        headers: { 'idempotency-key': k },
      });
      expect(replayed(res), url).toBe('true');
      expect(res.body.data.uid).toBe(first.body.data.uid);
    }
    expect(await keyCount()).toBe(before);
  });

  it('per path: the same header on another POST route is its own request', async () => {
    const k = idem();
    expect((await createKey({ name: 'Path one' }, k)).status).toBe(200);
    const other = await counter(k);
    expect(other.status).toBe(201);
    expect(replayed(other)).toBeUndefined();
  });

  it('ignored on GET', async () => {
    const res = await call(t.app, 'GET', '/api/me', {
      key: p.orgA.admin.key,
      headers: { 'idempotency-key': idem() },
    });
    expect(res.status).toBe(200);
    expect(replayed(res)).toBeUndefined();
  });
});

describe('the Idempotency-Key header itself', () => {
  it('255 characters are fine; 256 → 400 naming the header', async () => {
    expect((await counter('k'.repeat(255))).status).toBe(201);
    const res = await counter('k'.repeat(256));
    const body = expectErrorBody(res, 400, 'invalid_parameter');
    expect(body.errors?.[0]?.field).toBe('Idempotency-Key');
    const tooLongKey = await createKey({ name: 'x' }, `${crypto.randomUUID()}${'y'.repeat(255)}`);
    expectErrorBody(tooLongKey, 400);
  });

  it('empty → 400', async () => {
    expectErrorBody(await counter(''), 400, 'invalid_parameter');
  });
});

describe('error responses and idempotency (what the service does)', () => {
  it('a body that fails schema validation is refused before the key is claimed: not kept, not replayed', async () => {
    // Validation runs before the idempotency hook (as Stripe: "if incoming parameters failed
    // validation … no idempotent result is saved"), so the fixed request may reuse the key.
    const k = idem();
    const bad = await createKey({}, k);
    expectErrorBody(bad, 422, 'validation_failed');
    const badAgain = await createKey({}, k);
    expectErrorBody(badAgain, 422, 'validation_failed');
    expect(replayed(badAgain)).toBeUndefined();
    expect(await storedRows(k)).toEqual([]);
    const fixed = await createKey({ name: 'Fixed' }, k);
    expect(fixed.status).toBe(200);
    expect(replayed(await createKey({ name: 'Fixed' }, k))).toBe('true');
  });

  it("a 4xx answered by the handler (unknown scope 422, another organization's 403) is kept and replayed", async () => {
    const k = idem();
    const unknownScope = { name: 'Bad scope', scopes: ['invoices:delete'] };
    const first = await createKey(unknownScope, k);
    expectErrorBody(first, 422, 'validation_failed');
    const again = await createKey(unknownScope, k);
    expect(replayed(again)).toBe('true');
    expect(again.status).toBe(422);
    expect(again.body).toEqual(first.body);
    // The corrected body under the same key is a different request.
    expectErrorBody(
      await createKey({ name: 'Bad scope', scopes: ['invoices:read'] }, k),
      422,
      'idempotency_key_reused',
    );

    const k2 = idem();
    const foreign = { name: 'Elsewhere', organization_uid: p.orgB.uid };
    expectErrorBody(await createKey(foreign, k2), 403, 'not_a_member');
    const foreignAgain = await createKey(foreign, k2);
    expect(replayed(foreignAgain)).toBe('true');
    expectErrorBody(foreignAgain, 403, 'not_a_member');
  });

  it('a 5xx is not a result: the same key may retry, and the retry is what gets replayed', async () => {
    const k = idem();
    failNext = true;
    expectErrorBody(await counter(k), 500, 'internal_error');
    expect(await storedRows(k)).toEqual([]);
    const runsBefore = runs;
    const retry = await counter(k);
    expect(retry.status).toBe(201);
    expect(replayed(retry)).toBeUndefined();
    expect(runs).toBe(runsBefore + 1);
    const replay = await counter(k);
    expect(replayed(replay)).toBe('true');
    expect(replay.body).toEqual(retry.body);
    expect(runs).toBe(runsBefore + 1);
  });

  it('401 and 429 never claim a key', async () => {
    const k = idem();
    expectErrorBody(
      await call(t.app, 'POST', '/api/api-keys', { body: { name: 'x' }, headers: { 'idempotency-key': k } }),
      401,
    );
    expect(await storedRows(k)).toEqual([]);
  });
});

describe('the key, the writes and the stored answer commit together', () => {
  const unit = (mark: string, answer: number, k = idem()) =>
    call(t.app, 'POST', '/api/test-unit', {
      key: p.orgA.admin.key,
      body: { mark, answer },
      headers: { 'idempotency-key': k },
    });
  const marks = async (mark: string) => {
    const result = await t.db.execute(
      sql`select count(*)::int as n from test_unit_marks where mark = ${mark}`,
    );
    return (result as unknown as { rows: { n: number }[] }).rows[0]!.n;
  };

  it('a success: the write, the stored answer and then the effect after commit', async () => {
    const k = idem();
    const res = await unit('ok-1', 201, k);
    expect(res.status).toBe(201);
    expect(await marks('ok-1')).toBe(1);
    expect(effects).toContain('ok-1');
    expect(await storedRows(k)).toEqual([expect.objectContaining({ state: 'done', response_status: 201 })]);
    expect(replayed(await unit('ok-1', 201, k))).toBe('true');
    expect(await marks('ok-1')).toBe(1);
  });

  it('a server error after writing: nothing is kept — no write, no answer, no effect — and a retry runs', async () => {
    const k = idem();
    expect((await unit('fail-1', 500, k)).status).toBe(500);
    expect(await marks('fail-1')).toBe(0);
    expect(effects).not.toContain('fail-1');
    expect(await storedRows(k)).toEqual([]);
    const retry = await unit('fail-1', 201, k);
    expect(retry.status).toBe(201);
    expect(replayed(retry)).toBeUndefined();
    expect(await marks('fail-1')).toBe(1);
  });

  it('a 4xx after writing keeps what was written with the stored answer, as without a key', async () => {
    const k = idem();
    const refused = await unit('refused-1', 409, k);
    expectErrorBody(refused, 409, 'invalid_state');
    expect(await marks('refused-1')).toBe(1);
    const again = await unit('refused-1', 409, k);
    expect(replayed(again)).toBe('true');
    expect(again.raw).toBe(refused.raw);
    expect(await marks('refused-1')).toBe(1);
  });

  it('without a key each request commits on its own, as before', async () => {
    const res = await call(t.app, 'POST', '/api/test-unit', {
      key: p.orgA.admin.key,
      body: { mark: 'plain-1', answer: 500 },
    });
    expect(res.status).toBe(500);
    expect(await marks('plain-1')).toBe(1);
    expect(effects).toContain('plain-1');
  });

  it('a deferred route that writes outside db.transaction() is refused (500), so the rule cannot be broken quietly', async () => {
    const res = await call(t.app, 'POST', '/api/test-deferred-plain-write', {
      key: p.orgA.admin.key,
      body: { mark: 'x' },
      headers: { 'idempotency-key': idem() },
    });
    expect(res.status).toBe(500);
  });
});
