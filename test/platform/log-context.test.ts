import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * The fields log lines carry (docs/observability.md#logs): every line of a request its `request_id`,
 * and from authentication on the `organization_uid` the request acts in; every line a job writes its
 * `queue`, `job_id` and, when the job names one, `organization_uid`.
 */
type Line = Record<string, unknown>;
const lines: Line[] = [];
let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp({
    logStream: { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
    workers: true,
  });
  p = await createPrincipals(t);
  // Org A's admin is also an admin of org B (org A stays the default).
  await addUserToOrganization(t.db, t.config.apiKeyPepper, {
    organizationUid: p.orgB.uid,
    email: p.orgA.admin.email,
    fullName: 'A Admin',
    role: 'admin',
  });
});
afterAll(async () => t?.close());

async function linesOf(requestId: string, run: (headers: Record<string, string>) => Promise<unknown>) {
  await run({ 'x-request-id': requestId });
  // The last line ("request completed") is written when the response has gone.
  return vi.waitFor(
    () => {
      const own = lines.filter((l) => l.request_id === requestId);
      if (!own.some((l) => l.msg === 'request completed'))
        throw new Error(`not completed yet: ${JSON.stringify(own)}`);
      return own;
    },
    { timeout: 5000, interval: 20 },
  );
}

describe('request log lines', () => {
  it('carry the request id, and the organization from authentication on', async () => {
    const id = `log-${crypto.randomUUID()}`;
    const own = await linesOf(id, (headers) =>
      call(t.app, 'GET', `/api/invoices/${crypto.randomUUID()}`, { key: p.orgA.admin.key, headers }),
    );
    // (the 404 is logged by the error handler) → the request's one line, once answered
    expect(own.map((l) => l.msg)).toEqual([expect.any(String), 'request completed']);
    for (const line of own) expect(line.organization_uid, String(line.msg)).toBe(p.orgA.uid);
    expect(own.at(-1)).toMatchObject({
      level: 30,
      time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      pid: process.pid,
      hostname: expect.any(String),
      request_id: id,
      req: { method: 'GET', url: expect.stringMatching(/^\/api\/invoices\//), remoteAddress: '127.0.0.1' },
      res: { statusCode: 404 },
      responseTime: expect.any(Number),
    });
    expect(own.every((l) => l.queue === undefined && l.job_id === undefined)).toBe(true);
  });

  it('name the organization the request acts in: named in the path or query, or in the body', async () => {
    const inPath = await linesOf(`log-${crypto.randomUUID()}`, (headers) =>
      call(t.app, 'GET', `/api/organization/${p.orgB.uid}/ar-invoices`, { key: p.orgA.admin.key, headers }),
    );
    expect(inPath.at(-1)).toMatchObject({ msg: 'request completed', organization_uid: p.orgB.uid });

    const inQuery = await linesOf(`log-${crypto.randomUUID()}`, (headers) =>
      call(t.app, 'GET', '/api/parties', {
        key: p.orgA.admin.key,
        headers,
        query: { organization_uid: p.orgB.uid },
      }),
    );
    expect(inQuery.at(-1)).toMatchObject({ organization_uid: p.orgB.uid, res: { statusCode: 200 } });

    // The body is read after authentication: the lines from the handler on name org B.
    const inBody = await linesOf(`log-${crypto.randomUUID()}`, (headers) =>
      call(t.app, 'POST', '/api/parties', {
        key: p.orgA.admin.key,
        headers,
        body: { name: 'Logged Vendor', role: 'vendor', organization_uid: p.orgB.uid },
      }),
    );
    expect(inBody.at(-1)).toMatchObject({ organization_uid: p.orgB.uid, res: { statusCode: 201 } });
  });

  it('an organization the caller is not in is refused, and the lines keep the caller’s own', async () => {
    const other = (await createPrincipals(t)).orgA.uid;
    const own = await linesOf(`log-${crypto.randomUUID()}`, (headers) =>
      call(t.app, 'GET', '/api/parties', {
        key: p.orgA.admin.key,
        headers,
        query: { organization_uid: other },
      }),
    );
    expect(own.at(-1)).toMatchObject({ organization_uid: p.orgA.uid, res: { statusCode: 403 } });
    expect(JSON.stringify(own)).not.toContain(`"organization_uid":"${other}"`);
  });

  it('a failed authentication has no organization', async () => {
    const own = await linesOf(`log-${crypto.randomUUID()}`, (headers) =>
      call(t.app, 'GET', '/api/me', { key: `${p.orgA.admin.key.slice(0, -2)}xx`, headers }),
    );
    expect(own.at(-1)).toMatchObject({ res: { statusCode: 401 } });
    expect(own.every((l) => l.organization_uid === undefined)).toBe(true);
  });
});

describe('job log lines', () => {
  it('carry the queue, the job id and the organization the job names', async () => {
    const queue = `remit.test.logged-${crypto.randomBytes(3).toString('hex')}`;
    const marker = `inside ${queue}`;
    await t.deps.jobs.define<{ organization_uid?: string }>(queue, async () => {
      t.app.log.info({ step: 'work' }, marker);
      await Promise.resolve();
      t.app.log.warn(marker);
    });
    const withOrg = await t.deps.jobs.enqueue(t.db, queue, { organization_uid: p.orgB.uid });
    const without = await t.deps.jobs.enqueue(t.db, queue, {});
    const logged = await vi.waitFor(
      () => {
        const found = lines.filter((l) => l.msg === marker);
        if (found.length < 4) throw new Error(`${found.length} of 4 lines`);
        return found;
      },
      { timeout: 20_000, interval: 50 },
    );
    const of = (id: string) => logged.filter((l) => l.job_id === id);
    expect(of(withOrg)).toHaveLength(2);
    for (const line of of(withOrg)) expect(line).toMatchObject({ queue, organization_uid: p.orgB.uid });
    expect(of(without)).toHaveLength(2);
    for (const line of of(without)) {
      expect(line.queue).toBe(queue);
      expect(line.organization_uid).toBeUndefined();
    }
    // What a line says for itself wins over the context.
    expect(of(withOrg)[0]).toMatchObject({ step: 'work' });
  });
});
