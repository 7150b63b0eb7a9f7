import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * Every route with a range reads it through one parser (date-range.ts): a bare-date `to` is that whole
 * UTC day, a date-time `from` beside a bare-date `to` is accepted, and `from` later than `to` is 400
 * `invalid_parameter` naming the `from` parameter.
 */

let t: TestApp;
let p: Principals;
let agentUid: string;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
  const agent = await call(t.app, 'POST', '/api/agents', {
    key: p.orgA.admin.key,
    body: { name: 'Ranges', status: 'active' },
  });
  expect(agent.status, agent.raw).toBe(201);
  agentUid = agent.body.data.uid;
});
afterAll(async () => t?.close());

const routes = () => [
  { path: '/api/payments', from: 'from', to: 'to' },
  { path: `/api/organization/${p.orgA.uid}/audit-events`, from: 'from', to: 'to' },
  { path: `/api/organization/${p.orgA.uid}/ar-invoices`, from: 'due_date_from', to: 'due_date_to' },
  { path: `/api/organization/${p.orgA.uid}/ap-invoices`, from: 'issue_date_from', to: 'issue_date_to' },
];

describe('ranges on every route', () => {
  it('a date-time from beside a bare-date to is accepted', async () => {
    for (const r of routes()) {
      const res = await call(t.app, 'GET', r.path, {
        key: p.orgA.admin.key,
        query: { [r.from]: '2026-05-01T10:00:00Z', [r.to]: '2026-05-01' },
      });
      expect(res.status, `${r.path}: ${res.raw}`).toBe(200);
    }
  });

  it('from later than to is 400 invalid_parameter naming the from parameter', async () => {
    for (const r of routes()) {
      const res = await call(t.app, 'GET', r.path, {
        key: p.orgA.admin.key,
        query: { [r.from]: '2026-05-02', [r.to]: '2026-05-01T23:59:59Z' },
      });
      expectErrorBody(res, 400, 'invalid_parameter');
      expect(res.body.errors[0].field, r.path).toBe(r.from);
    }
  });

  it('agent activities: a bound later than its end is 400 naming it; a zone-less _to is UTC', async () => {
    const path = `/api/agents/${agentUid}/activities`;
    for (const name of ['started_on', 'completed_on', 'created_on']) {
      const res = await call(t.app, 'GET', path, {
        key: p.orgA.admin.key,
        query: { [`${name}_from`]: '2026-05-02T00:00:00Z', [`${name}_to`]: '2026-05-01T12:00:00' },
      });
      expectErrorBody(res, 400, 'invalid_parameter');
      expect(res.body.errors[0].field).toBe(`${name}_from`);
    }
    const run = await call(t.app, 'POST', `/api/agents/${agentUid}/runs`, {
      key: p.orgA.admin.key,
      body: { trigger_type: 'manual' },
    });
    expect([200, 201, 202], run.raw).toContain(run.status);
    const now = new Date();
    const zoneless = new Date(now.getTime() + 60_000).toISOString().replace('Z', '');
    const listed = await call(t.app, 'GET', path, {
      key: p.orgA.admin.key,
      query: { created_on_from: new Date(now.getTime() - 60_000).toISOString(), created_on_to: zoneless },
    });
    expect(listed.status, listed.raw).toBe(200);
    expect(listed.body.data.items.length).toBeGreaterThan(0);
  });
});
