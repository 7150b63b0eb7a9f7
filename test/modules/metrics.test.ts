import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawQuery } from '../../src/platform/db/client.ts';
import { invoicePayments, invoices } from '../../src/modules/invoices/invoices.tables.ts';
import { parties } from '../../src/modules/parties/parties.tables.ts';
import { initOrganization } from '../../src/modules/tenancy/tenancy.service.ts';
import { PRESET_DEFINITIONS } from '../../src/modules/metrics/metric-presets.ts';
import {
  computePresetValues,
  installMetricPresets,
  METRIC_PRESETS_CRON,
  METRIC_PRESETS_QUEUE,
  runDailyPresetJob,
} from '../../src/modules/metrics/metric-presets.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { runCli } from '../helpers/cli.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';
import { until } from '../helpers/until.ts';
import { processDatabase, type ProcessDatabase } from '../helpers/test-database.ts';

let t: TestApp;
let p: Principals;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
const tag = () => Math.random().toString(36).slice(2, 8);
const newUid = (prefix = 'm') => `${prefix}_${tag()}`;

/** Metrics of orgA used across the value tests, and what orgB owns. */
let orgMetric: string;
let partyMetric: string;
let userMetric: string;
let partyA: string;
let partyB: string;
let foreignMetric: string;
let foreignPartyMetric: string;
let foreignValue: string;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' }, workers: true });
  p = await createPrincipals(t);
  partyA = (await createParty(p.orgA.admin.key, 'Client A')).uid;
  partyB = (await createParty(p.orgB.admin.key, 'Client B')).uid;
  orgMetric = (await createMetric(p.orgA.admin.key, { name: 'Org metric' })).uid;
  partyMetric = (await createMetric(p.orgA.admin.key, { name: 'Party metric', context_type: 'PARTY' })).uid;
  userMetric = (await createMetric(p.orgA.admin.key, { name: 'User metric', context_type: 'USER' })).uid;
  foreignMetric = (await createMetric(p.orgB.admin.key, { uid: newUid('b_only'), name: 'B only' })).uid;
  foreignPartyMetric = (await createMetric(p.orgB.admin.key, { name: 'B party', context_type: 'PARTY' })).uid;
  const value = await postValue(p.orgB.admin.key, 'PARTY', partyB, {
    metric_uid: foreignPartyMetric,
    metric_date: '2025-01-01',
    value: 1,
  });
  expect(value.status, value.raw).toBe(200);
  foreignValue = value.body.data.uid;
}, 120_000);
afterAll(async () => t?.close());

async function createParty(key: string, name: string) {
  const res = await call(t.app, 'POST', '/api/parties', { key, body: { name, role: 'client' } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data as { uid: string };
}
const postMetric = (key: string, body: unknown) => call(t.app, 'POST', '/api/metrics', { key, body });
async function createMetric(key: string, body: Record<string, unknown> = {}) {
  const res = await postMetric(key, { uid: newUid(), name: 'A metric', ...body });
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}
const getMetric = (uid: string, key = p.orgA.admin.key) => call(t.app, 'GET', `/api/metrics/${uid}`, { key });
const patchMetric = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/metrics/${uid}`, { key, body });
const postValue = (key: string, contextType: string, entityUid: string, body: unknown) =>
  call(t.app, 'POST', `/api/metrics/values/${contextType}/${entityUid}`, { key, body });
const patchValue = (uid: string, body: unknown, key = p.orgA.admin.key) =>
  call(t.app, 'PATCH', `/api/metrics/values/${uid}`, { key, body });
const series = (metricUid: string, query: Record<string, string | number> = {}, key = p.orgA.admin.key) =>
  call(t.app, 'GET', `/api/metrics/${metricUid}/values`, { key, query });

// ---------------------------------------------------------------------------------------------------
describe('POST /api/metrics', () => {
  it('creates a definition with the defaults of interface 2.14: 200 in the envelope', async () => {
    const uid = newUid('churn');
    const res = await postMetric(p.orgA.admin.key, { uid, name: '  Churned clients ' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: expect.any(String) });
    expect(res.body.data).toEqual({
      uid,
      organization_uid: p.orgA.uid,
      name: 'Churned clients',
      context_type: 'ORGANIZATION',
      description: '',
      formula: '',
      value_type: 'count',
      storage_unit: 'raw',
      is_snapshot: false,
      period_definition: 'as_of_date',
      is_active: true,
      preset: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect((await getMetric(uid)).body.data).toEqual(res.body.data);
  });

  it('keeps every optional field as sent', async () => {
    const body = {
      uid: newUid('revenue'),
      name: 'Revenue',
      context_type: 'PARTY',
      description: 'Billed revenue per client',
      formula: 'Σ total_cents',
      value_type: 'currency',
      storage_unit: 'cents',
      is_snapshot: true,
      period_definition: 'calendar_month',
      is_active: false,
    };
    const res = await postMetric(p.orgA.member.key, body);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject(body);
  });

  it('422 for a value outside each enum, naming the field', async () => {
    for (const [field, bad] of [
      ['context_type', 'organization'],
      ['context_type', 'INVOICE'],
      ['value_type', 'money'],
      ['storage_unit', 'dollars'],
      ['period_definition', 'weekly'],
      ['is_snapshot', 'yes'],
      ['is_active', 1],
    ] as const) {
      const res = await postMetric(p.orgA.admin.key, { uid: newUid(), name: 'x', [field]: bad });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors?.[0]?.field, `${field}=${String(bad)}`).toBe(field);
    }
  });

  it('uid must be snake_case: lower-case words of letters and digits joined by single underscores', async () => {
    for (const bad of [
      'Dso',
      'dso-x',
      'dso__x',
      '_dso',
      'dso_',
      '1dso',
      'd so',
      'dsó',
      '',
      'a'.repeat(101),
    ]) {
      const res = await postMetric(p.orgA.admin.key, { uid: bad, name: 'x' });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors?.[0]?.field, bad).toBe('uid');
    }
    for (const good of [`d${tag()}`, `aging_1_30_${tag()}`, `a1_${tag()}_b2`]) {
      expect((await postMetric(p.orgA.admin.key, { uid: good, name: 'x' })).status, good).toBe(200);
    }
  });

  it('422 for "values", the path segment of the value routes', async () => {
    const body = expectErrorBody(await postMetric(p.orgA.admin.key, { uid: 'values', name: 'x' }), 422);
    expect(body.errors).toEqual([{ field: 'uid', message: expect.stringContaining('reserved') }]);
  });

  it('422 without uid or name, and for a field the definition does not have', async () => {
    expect(expectErrorBody(await postMetric(p.orgA.admin.key, { name: 'x' }), 422).errors?.[0]?.field).toBe(
      'uid',
    );
    expect(
      expectErrorBody(await postMetric(p.orgA.admin.key, { uid: newUid() }), 422).errors?.[0]?.field,
    ).toBe('name');
    const extra = expectErrorBody(
      await postMetric(p.orgA.admin.key, { uid: newUid(), name: 'x', preset: 'dso' }),
      422,
    );
    expect(extra.errors).toEqual([{ field: 'preset', message: 'is not an allowed field' }]);
  });

  it('409 for a uid the organization already has; another organization may use it (and learns nothing)', async () => {
    const uid = newUid('dup');
    await createMetric(p.orgA.admin.key, { uid, name: 'First' });
    const again = await postMetric(p.orgA.admin.key, { uid, name: 'Second', value_type: 'ratio' });
    const body = expectErrorBody(again, 409, 'already_exists');
    expect(body.message).toContain(uid);
    expect((await getMetric(uid)).body.data.name).toBe('First');
    const elsewhere = await postMetric(p.orgB.admin.key, { uid, name: 'B own' });
    expect(elsewhere.status, elsewhere.raw).toBe(200);
    expect(elsewhere.body.data.organization_uid).toBe(p.orgB.uid);
    expect((await getMetric(uid)).body.data.name).toBe('First');
  });

  commonRouteChecks(
    'POST /api/metrics',
    {
      method: 'POST',
      url: () => '/api/metrics',
      body: () => ({ uid: newUid('checked'), name: 'Checked' }),
      scope: 'metrics:write',
      foreignOrganizationBody: ({ p }) => ({ uid: newUid(), name: 'x', organization_uid: p.orgB.uid }),
    },
    () => ({ t, p }),
  );
});

// ---------------------------------------------------------------------------------------------------
describe('GET /api/metrics/{metric_uid}', () => {
  it('returns the definition; 404 for an unknown uid and for a uid only another organization has', async () => {
    const res = await getMetric(orgMetric);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ uid: orgMetric, name: 'Org metric', organization_uid: p.orgA.uid });
    expectErrorBody(await getMetric('no_such_metric'), 404, 'not_found');
    expectErrorBody(await getMetric(foreignMetric), 404, 'not_found');
    expect((await getMetric(foreignMetric, p.orgB.admin.key)).status).toBe(200);
  });

  it('400 for a path that cannot be a metric uid', async () => {
    expectErrorBody(await getMetric('Not-Snake'), 400, 'invalid_parameter');
  });

  commonRouteChecks(
    'GET /api/metrics/{metric_uid}',
    {
      method: 'GET',
      url: () => `/api/metrics/${orgMetric}`,
      scope: 'metrics:read',
      foreignUrl: () => `/api/metrics/${foreignMetric}`,
      foreignOrganizationUrl: ({ p }) => `/api/metrics/${orgMetric}?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

// ---------------------------------------------------------------------------------------------------
describe('GET /api/metrics', () => {
  it("lists the organization's definitions oldest first, paged, never another organization's", async () => {
    const first = await call(t.app, 'GET', '/api/metrics', {
      key: p.orgA.admin.key,
      query: { per_page: 100 },
    });
    expect(first.status).toBe(200);
    const items = first.body.data.items as { uid: string; organization_uid: string; created_at: string }[];
    expect(items.length).toBeGreaterThanOrEqual(3);
    expect(items.every((m) => m.organization_uid === p.orgA.uid)).toBe(true);
    expect(items.map((m) => m.uid)).not.toContain(foreignMetric);
    const times = items.map((m) => m.created_at);
    expect([...times].sort()).toEqual(times);
    expect(first.body.data._meta).toEqual({
      page: 1,
      per_page: 100,
      total_pages: 1,
      total_items: items.length,
    });

    const page2 = await call(t.app, 'GET', '/api/metrics', {
      key: p.orgA.admin.key,
      query: { per_page: 2, page: 2 },
    });
    expect(page2.body.data.items.map((m: { uid: string }) => m.uid)).toEqual(
      items.slice(2, 4).map((m) => m.uid),
    );
    expect(page2.body.data._meta).toMatchObject({ page: 2, per_page: 2, total_items: items.length });
  });

  it('filters by context_type and is_active', async () => {
    const inactive = await createMetric(p.orgA.admin.key, { context_type: 'USER', is_active: false });
    const users = await call(t.app, 'GET', '/api/metrics', {
      key: p.orgA.admin.key,
      query: { context_type: 'USER', per_page: 100 },
    });
    const uids = users.body.data.items.map((m: { uid: string }) => m.uid);
    expect(uids).toContain(userMetric);
    expect(uids).toContain(inactive.uid);
    expect(users.body.data.items.every((m: { context_type: string }) => m.context_type === 'USER')).toBe(
      true,
    );
    const off = await call(t.app, 'GET', '/api/metrics', {
      key: p.orgA.admin.key,
      query: { context_type: 'USER', is_active: false },
    });
    expect(off.body.data.items.map((m: { uid: string }) => m.uid)).toEqual([inactive.uid]);
  });

  it('400 for a bad filter or page size', async () => {
    for (const query of [
      { per_page: 0 },
      { per_page: 101 },
      { context_type: 'TEAM' },
      { organization_uid: 'x' },
    ] as Record<string, string | number>[]) {
      expectErrorBody(await call(t.app, 'GET', '/api/metrics', { key: p.orgA.admin.key, query }), 400);
    }
  });

  commonRouteChecks(
    'GET /api/metrics',
    {
      method: 'GET',
      url: () => '/api/metrics',
      scope: 'metrics:read',
      foreignOrganizationUrl: ({ p }) => `/api/metrics?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

// ---------------------------------------------------------------------------------------------------
describe('PATCH /api/metrics/{metric_uid}', () => {
  it('changes name, description, formula and is_active, and only what is sent', async () => {
    const created = await createMetric(p.orgA.admin.key, { description: 'before', formula: 'a + b' });
    const res = await patchMetric(created.uid, { name: 'Renamed', is_active: false });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({
      ...created,
      name: 'Renamed',
      is_active: false,
      updated_at: expect.stringMatching(ISO),
    });
    const again = await patchMetric(created.uid, { description: 'after', formula: 'a − b', is_active: true });
    expect(again.body.data).toMatchObject({
      name: 'Renamed',
      description: 'after',
      formula: 'a − b',
      is_active: true,
    });
    expect((await getMetric(created.uid)).body.data).toEqual(again.body.data);
    expect(Date.parse(again.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
  });

  it('an empty body changes nothing', async () => {
    const created = await createMetric(p.orgA.admin.key);
    const res = await patchMetric(created.uid, {});
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(created);
  });

  it('422 naming each immutable field sent, and nothing changes (not even the editable fields sent with it)', async () => {
    const created = await createMetric(p.orgA.admin.key, { name: 'Fixed' });
    for (const [field, value] of [
      ['uid', 'renamed_uid'],
      ['context_type', 'PARTY'],
      ['value_type', 'ratio'],
      ['storage_unit', 'cents'],
      ['is_snapshot', true],
      ['period_definition', 'calendar_month'],
      // Sending the current value is still sending an immutable field.
      ['context_type', 'ORGANIZATION'],
    ] as const) {
      const res = await patchMetric(created.uid, { name: 'Changed?', [field]: value });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors).toEqual([{ field, message: expect.stringContaining('immutable') }]);
      expect(body.message).toContain(field);
    }
    const both = expectErrorBody(
      await patchMetric(created.uid, { value_type: 'ratio', storage_unit: 'cents' }),
      422,
    );
    expect(both.errors?.map((e) => e.field)).toEqual(['value_type', 'storage_unit']);
    expect((await getMetric(created.uid)).body.data).toEqual(created);
  });

  it('422 for a field a definition does not have, and for a blank name; nothing changes', async () => {
    const created = await createMetric(p.orgA.admin.key);
    expect(
      expectErrorBody(await patchMetric(created.uid, { organization_uid: p.orgA.uid }), 422).errors,
    ).toEqual([{ field: 'organization_uid', message: 'is not an allowed field' }]);
    expect(expectErrorBody(await patchMetric(created.uid, { name: '' }), 422).errors?.[0]?.field).toBe(
      'name',
    );
    expect(expectErrorBody(await patchMetric(created.uid, { is_active: 'no' }), 422).errors?.[0]?.field).toBe(
      'is_active',
    );
    expect((await getMetric(created.uid)).body.data).toEqual(created);
  });

  it("404 for an unknown uid and for another organization's metric, which stays as it was", async () => {
    expectErrorBody(await patchMetric('no_such_metric', { name: 'x' }), 404);
    expectErrorBody(await patchMetric(foreignMetric, { name: 'Hijacked' }), 404);
    expect((await getMetric(foreignMetric, p.orgB.admin.key)).body.data.name).toBe('B only');
  });

  commonRouteChecks(
    'PATCH /api/metrics/{metric_uid}',
    {
      method: 'PATCH',
      url: () => `/api/metrics/${orgMetric}`,
      body: () => ({ description: 'checked' }),
      scope: 'metrics:write',
      foreignUrl: () => `/api/metrics/${foreignMetric}`,
      foreignOrganizationUrl: ({ p }) => `/api/metrics/${orgMetric}?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

// ---------------------------------------------------------------------------------------------------
describe('POST /api/metrics/values/{context_type}/{entity_uid}', () => {
  it('creates one value: 200 with the value of 2.15, time_unit day and timezone UTC by default', async () => {
    const definition = await createMetric(p.orgA.admin.key, {
      name: 'Cash',
      value_type: 'currency',
      storage_unit: 'cents',
      period_definition: 'month_to_date',
    });
    const res = await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, {
      metric_uid: definition.uid,
      metric_date: '2025-03-15',
      value: 123456,
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200 });
    expect(res.body.data).toEqual({
      uid: expect.stringMatching(UUID),
      organization_uid: p.orgA.uid,
      metric_uid: definition.uid,
      metric_name: 'Cash',
      period_definition: 'month_to_date',
      context_type: 'ORGANIZATION',
      entity_uid: p.orgA.uid,
      time_unit: 'day',
      timezone: 'UTC',
      metric_date: '2025-03-15',
      storage_unit: 'cents',
      value_type: 'currency',
      value: 123456,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      _metadata: {},
    });
  });

  it('keeps time_unit, an IANA timezone, a fractional value and _metadata as sent', async () => {
    const _metadata = { source: 'erp', inputs: { invoices: [1, 2, 3], ok: true, none: null } };
    const res = await postValue(p.orgA.member.key, 'PARTY', partyA, {
      metric_uid: partyMetric,
      time_unit: 'month',
      metric_date: '2025-02-01',
      value: -12.75,
      timezone: 'America/Bogota',
      _metadata,
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      context_type: 'PARTY',
      entity_uid: partyA,
      time_unit: 'month',
      timezone: 'America/Bogota',
      value: -12.75,
      _metadata,
    });
  });

  it('USER values need a member of the organization', async () => {
    const ok = await postValue(p.orgA.admin.key, 'USER', p.orgA.member.userUid, {
      metric_uid: userMetric,
      metric_date: '2025-03-01',
      value: 3,
    });
    expect(ok.status, ok.raw).toBe(200);
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'USER', p.orgB.member.userUid, {
        metric_uid: userMetric,
        metric_date: '2025-03-01',
        value: 3,
      }),
      404,
      'not_found',
    );
  });

  it("422 when the path's context type is not the metric's", async () => {
    const wrong = await postValue(p.orgA.admin.key, 'PARTY', partyA, {
      metric_uid: orgMetric,
      metric_date: '2025-03-01',
      value: 1,
    });
    const body = expectErrorBody(wrong, 422, 'validation_failed');
    expect(body.errors).toEqual([
      { field: 'context_type', message: expect.stringContaining('ORGANIZATION') },
    ]);
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, {
        metric_uid: partyMetric,
        metric_date: '2025-03-01',
        value: 1,
      }),
      422,
    );
    expect((await series(orgMetric, { entity_uid: partyA })).body.data.items).toEqual([]);
  });

  it('404 for an entity of another organization (or none): a party, an organization, a user', async () => {
    const body = { metric_date: '2025-03-02', value: 1 };
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'PARTY', partyB, { ...body, metric_uid: partyMetric }),
      404,
      'not_found',
    );
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'PARTY', MISSING, { ...body, metric_uid: partyMetric }),
      404,
    );
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgB.uid, { ...body, metric_uid: orgMetric }),
      404,
    );
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'ORGANIZATION', MISSING, { ...body, metric_uid: orgMetric }),
      404,
    );
    // orgB's own party metric and party are out of reach from orgA as well: the party the path names is
    // checked first.
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'PARTY', partyB, { ...body, metric_uid: foreignPartyMetric }),
      404,
      'not_found',
    );
    // And so is a body that is not valid at all.
    expectErrorBody(await postValue(p.orgA.admin.key, 'PARTY', partyB, { value: 'x' }), 404, 'not_found');
  });

  it("422 for a metric_uid the organization does not have (another organization's too) and for an inactive one", async () => {
    const unknown = await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, {
      metric_uid: 'no_such_metric',
      metric_date: '2025-03-01',
      value: 1,
    });
    expect(expectErrorBody(unknown, 422, 'validation_failed').errors).toEqual([
      { field: 'metric_uid', message: 'does not exist in this organization' },
    ]);
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, {
        metric_uid: foreignMetric,
        metric_date: '2025-03-01',
        value: 1,
      }),
      422,
    );
    const retired = await createMetric(p.orgA.admin.key, { is_active: false });
    const inactive = await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, {
      metric_uid: retired.uid,
      metric_date: '2025-03-01',
      value: 1,
    });
    expect(expectErrorBody(inactive, 422).errors).toEqual([{ field: 'metric_uid', message: 'is inactive' }]);
  });

  it('422 for a metric_date that is not a date, a time_unit outside day/month/year, a missing or non-number value', async () => {
    const base = { metric_uid: orgMetric, metric_date: '2025-03-03', value: 1 };
    for (const [patch, field] of [
      [{ metric_date: '2025-02-30' }, 'metric_date'],
      [{ metric_date: '2025-13-01' }, 'metric_date'],
      [{ metric_date: '20250301' }, 'metric_date'],
      [{ metric_date: '2025-03-01T00:00:00Z' }, 'metric_date'],
      [{ metric_date: 'yesterday' }, 'metric_date'],
      [{ metric_date: undefined }, 'metric_date'],
      [{ time_unit: 'week' }, 'time_unit'],
      [{ time_unit: 'DAY' }, 'time_unit'],
      [{ value: '12' }, 'value'],
      [{ value: undefined }, 'value'],
      [{ metric_uid: undefined }, 'metric_uid'],
      [{ _metadata: [1, 2] }, '_metadata'],
      [{ _metadata: 'text' }, '_metadata'],
      [{ entity_uid: p.orgA.uid }, 'entity_uid'],
    ] as const) {
      const res = await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, { ...base, ...patch });
      expect(expectErrorBody(res, 422, 'validation_failed').errors?.[0]?.field, JSON.stringify(patch)).toBe(
        field,
      );
    }
    expect((await series(orgMetric, { from: '2025-03-03', to: '2025-03-03' })).body.data.items).toEqual([]);
  });

  it('422 for a timezone that is not an IANA name', async () => {
    for (const timezone of ['Mars/Olympus', '+05:00', 'UTC+5', '', 'America/Bogota; drop table']) {
      const res = await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, {
        metric_uid: orgMetric,
        metric_date: '2025-03-04',
        value: 1,
        timezone,
      });
      expect(expectErrorBody(res, 422, 'validation_failed').errors?.[0]?.field, timezone).toBe('timezone');
    }
    for (const timezone of ['UTC', 'Europe/Madrid', 'Etc/GMT+5']) {
      const res = await postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, {
        metric_uid: orgMetric,
        metric_date: '2025-03-04',
        time_unit: timezone === 'UTC' ? 'day' : timezone === 'Europe/Madrid' ? 'month' : 'year',
        value: 1,
        timezone,
      });
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data.timezone).toBe(timezone);
    }
  });

  it('400 for a context type or entity uid in the path that cannot be one', async () => {
    const body = { metric_uid: orgMetric, metric_date: '2025-03-01', value: 1 };
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'organization', p.orgA.uid, body),
      400,
      'invalid_parameter',
    );
    expectErrorBody(await postValue(p.orgA.admin.key, 'INVOICE', p.orgA.uid, body), 400, 'invalid_parameter');
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'ORGANIZATION', 'not-a-uuid', body),
      400,
      'invalid_parameter',
    );
  });

  it('409 for a second value of the same entity, metric, time unit and date; any other combination is new', async () => {
    const metric = (await createMetric(p.orgA.admin.key, { context_type: 'PARTY' })).uid;
    const other = (await createParty(p.orgA.admin.key, 'Client A2')).uid;
    const point = { metric_uid: metric, time_unit: 'day', metric_date: '2025-04-01', value: 10 };
    expect((await postValue(p.orgA.admin.key, 'PARTY', partyA, point)).status).toBe(200);
    const dup = await postValue(p.orgA.admin.key, 'PARTY', partyA, {
      ...point,
      value: 99,
      timezone: 'Europe/Madrid',
    });
    const body = expectErrorBody(dup, 409, 'already_exists');
    expect(body.message).toContain('2025-04-01');
    // time_unit omitted is day: the same point again.
    expectErrorBody(
      await postValue(p.orgA.admin.key, 'PARTY', partyA, {
        metric_uid: metric,
        metric_date: '2025-04-01',
        value: 1,
      }),
      409,
    );
    for (const [entity, patch] of [
      [partyA, { time_unit: 'month' }],
      [partyA, { metric_date: '2025-04-02' }],
      [other, {}],
    ] as const) {
      const res = await postValue(p.orgA.admin.key, 'PARTY', entity, { ...point, ...patch });
      expect(res.status, res.raw).toBe(200);
    }
    const stored = (await series(metric, { entity_uid: partyA, time_unit: 'day' })).body.data.items;
    expect(stored.map((v: { metric_date: string; value: number }) => [v.metric_date, v.value])).toEqual([
      ['2025-04-01', 10],
      ['2025-04-02', 10],
    ]);
  });

  it('10 concurrent posts of the same point: exactly one 200, nine 409, one row', async () => {
    const metric = (await createMetric(p.orgA.admin.key)).uid;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        postValue(p.orgA.admin.key, 'ORGANIZATION', p.orgA.uid, {
          metric_uid: metric,
          metric_date: '2025-05-01',
          value: i,
        }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of results.filter((r) => r.status === 409)) expectErrorBody(r, 409, 'already_exists');
    const rows = await rawQuery<{ n: number }>(
      t.db,
      `select count(*)::int as n from metric_values where organization_uid = $1 and metric_uid = $2`,
      [p.orgA.uid, metric],
    );
    expect(rows[0]!.n).toBe(1);
    const winner = results.find((r) => r.status === 200)!;
    expect((await series(metric)).body.data.items).toEqual([winner.body.data]);
  });

  commonRouteChecks(
    'POST /api/metrics/values/{context_type}/{entity_uid}',
    {
      method: 'POST',
      url: () => `/api/metrics/values/PARTY/${partyA}`,
      body: () => ({ metric_uid: partyMetric, metric_date: '2030-01-01', value: 1 }),
      scope: 'metrics:write',
      foreignUrl: () => `/api/metrics/values/PARTY/${partyB}`,
      foreignOrganizationBody: ({ p }) => ({
        metric_uid: partyMetric,
        metric_date: '2030-01-01',
        value: 1,
        organization_uid: p.orgB.uid,
      }),
    },
    () => ({ t, p }),
  );
});

// ---------------------------------------------------------------------------------------------------
describe('PATCH /api/metrics/values/{value_uid}', () => {
  async function freshValue() {
    const res = await postValue(p.orgA.admin.key, 'PARTY', partyA, {
      metric_uid: partyMetric,
      metric_date: `2026-0${1 + Math.floor(Math.random() * 9)}-${String(1 + Math.floor(Math.random() * 28)).padStart(2, '0')}`,
      time_unit: 'year',
      value: 5,
      _metadata: { v: 1 },
    });
    if (res.status === 409) return freshValue();
    expect(res.status, res.raw).toBe(200);
    return res.body.data;
  }

  it('changes value, _metadata (replaced whole) and timezone; nothing else', async () => {
    const created = await freshValue();
    const res = await patchValue(created.uid, {
      value: 7.5,
      _metadata: { v: 2, note: 'restated' },
      timezone: 'Asia/Tokyo',
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({
      ...created,
      value: 7.5,
      _metadata: { v: 2, note: 'restated' },
      timezone: 'Asia/Tokyo',
      updated_at: expect.stringMatching(ISO),
    });
    const only = await patchValue(created.uid, { value: 0 });
    expect(only.body.data).toMatchObject({
      value: 0,
      _metadata: { v: 2, note: 'restated' },
      timezone: 'Asia/Tokyo',
    });
    const stored = (
      await series(partyMetric, { entity_uid: partyA, time_unit: 'year' })
    ).body.data.items.find((v: { uid: string }) => v.uid === created.uid);
    expect(stored).toEqual(only.body.data);
  });

  it('422 naming each immutable field sent; nothing changes', async () => {
    const created = await freshValue();
    for (const [field, value] of [
      ['metric_uid', orgMetric],
      ['entity_uid', partyA],
      ['time_unit', 'day'],
      ['metric_date', '2020-01-01'],
      ['context_type', 'ORGANIZATION'],
    ] as const) {
      const res = await patchValue(created.uid, { value: 999, [field]: value });
      const body = expectErrorBody(res, 422, 'validation_failed');
      expect(body.errors).toEqual([{ field, message: expect.stringContaining('immutable') }]);
    }
    expectErrorBody(await patchValue(created.uid, { value: 999, timezone: 'Nowhere/Land' }), 422);
    expect(expectErrorBody(await patchValue(created.uid, { value: 999, uid: MISSING }), 422).errors).toEqual([
      { field: 'uid', message: 'is not an allowed field' },
    ]);
    expectErrorBody(await patchValue(created.uid, { value: 'big' }), 422);
    const stored = (
      await series(partyMetric, { entity_uid: partyA, time_unit: 'year' })
    ).body.data.items.find((v: { uid: string }) => v.uid === created.uid);
    expect(stored).toEqual(created);
  });

  it("404 for an unknown value and for another organization's; 400 for a uid that is not a UUID", async () => {
    expectErrorBody(await patchValue(MISSING, { value: 1 }), 404, 'not_found');
    expectErrorBody(await patchValue(foreignValue, { value: 666 }), 404, 'not_found');
    const theirs = await call(t.app, 'GET', `/api/metrics/${foreignPartyMetric}/values`, {
      key: p.orgB.admin.key,
    });
    expect(theirs.body.data.items[0].value).toBe(1);
    expectErrorBody(await patchValue('not-a-uuid', { value: 1 }), 400, 'invalid_parameter');
  });

  commonRouteChecks(
    'PATCH /api/metrics/values/{value_uid}',
    {
      method: 'PATCH',
      url: async () => `/api/metrics/values/${(await freshValue()).uid}`,
      body: () => ({ value: 2 }),
      scope: 'metrics:write',
      foreignUrl: () => `/api/metrics/values/${foreignValue}`,
    },
    () => ({ t, p }),
  );
});

// ---------------------------------------------------------------------------------------------------
describe('GET /api/metrics/{metric_uid}/values', () => {
  let metric: string;
  let partyA2: string;

  beforeAll(async () => {
    metric = (await createMetric(p.orgA.admin.key, { context_type: 'PARTY', name: 'Series' })).uid;
    partyA2 = (await createParty(p.orgA.admin.key, 'Client A3')).uid;
    // Posted out of order: the series comes back by date.
    for (const [entity, unit, date, value] of [
      [partyA, 'day', '2025-01-03', 3],
      [partyA, 'day', '2025-01-01', 1],
      [partyA, 'day', '2025-01-05', 5],
      [partyA, 'day', '2025-01-02', 2],
      [partyA, 'day', '2025-01-04', 4],
      [partyA, 'month', '2025-01-01', 100],
      [partyA2, 'day', '2025-01-02', 20],
    ] as const) {
      const res = await postValue(p.orgA.admin.key, 'PARTY', entity, {
        metric_uid: metric,
        time_unit: unit,
        metric_date: date,
        value,
      });
      expect(res.status, res.raw).toBe(200);
    }
  });

  const points = (res: { body: { data: { items: { metric_date: string; value: number }[] } } }) =>
    res.body.data.items.map((v) => [v.metric_date, v.value]);

  it('reads the whole series by date, every entity and time unit, in the value shape', async () => {
    const res = await series(metric);
    expect(res.status).toBe(200);
    expect(res.body.data._meta).toEqual({ page: 1, per_page: 100, total_pages: 1, total_items: 7 });
    expect(res.body.data.items.map((v: { metric_date: string }) => v.metric_date)).toEqual([
      '2025-01-01',
      '2025-01-01',
      '2025-01-02',
      '2025-01-02',
      '2025-01-03',
      '2025-01-04',
      '2025-01-05',
    ]);
    expect(res.body.data.items[0]).toMatchObject({
      metric_uid: metric,
      metric_name: 'Series',
      context_type: 'PARTY',
    });
  });

  it('filters by entity_uid, time_unit and an inclusive from/to range, and pages', async () => {
    expect(points(await series(metric, { entity_uid: partyA, time_unit: 'day' }))).toEqual([
      ['2025-01-01', 1],
      ['2025-01-02', 2],
      ['2025-01-03', 3],
      ['2025-01-04', 4],
      ['2025-01-05', 5],
    ]);
    expect(points(await series(metric, { time_unit: 'month' }))).toEqual([['2025-01-01', 100]]);
    expect(points(await series(metric, { entity_uid: partyA2 }))).toEqual([['2025-01-02', 20]]);
    expect(
      points(
        await series(metric, { entity_uid: partyA, time_unit: 'day', from: '2025-01-02', to: '2025-01-04' }),
      ),
    ).toEqual([
      ['2025-01-02', 2],
      ['2025-01-03', 3],
      ['2025-01-04', 4],
    ]);
    expect(points(await series(metric, { time_unit: 'day', from: '2025-01-05' }))).toEqual([
      ['2025-01-05', 5],
    ]);
    expect(points(await series(metric, { time_unit: 'day', to: '2025-01-01' }))).toEqual([['2025-01-01', 1]]);
    const page = await series(metric, { entity_uid: partyA, time_unit: 'day', per_page: 2, page: 2 });
    expect(points(page)).toEqual([
      ['2025-01-03', 3],
      ['2025-01-04', 4],
    ]);
    expect(page.body.data._meta).toEqual({ page: 2, per_page: 2, total_pages: 3, total_items: 5 });
    expect(points(await series(metric, { entity_uid: MISSING }))).toEqual([]);
  });

  it('400 for a malformed filter or a range that ends before it starts', async () => {
    for (const query of [
      { from: '2025-02-30' },
      { to: 'soon' },
      { time_unit: 'week' },
      { entity_uid: 'x' },
      { per_page: 1001 },
      { from: '2025-01-05', to: '2025-01-01' },
    ] as Record<string, string | number>[]) {
      expectErrorBody(await series(metric, query), 400, 'invalid_parameter');
    }
  });

  it("404 for an unknown metric and for another organization's", async () => {
    expectErrorBody(await series('no_such_metric'), 404, 'not_found');
    expectErrorBody(await series(foreignPartyMetric), 404, 'not_found');
  });

  commonRouteChecks(
    'GET /api/metrics/{metric_uid}/values',
    {
      method: 'GET',
      url: () => `/api/metrics/${partyMetric}/values`,
      scope: 'metrics:read',
      foreignUrl: () => `/api/metrics/${foreignPartyMetric}/values`,
      foreignOrganizationUrl: ({ p }) => `/api/metrics/${partyMetric}/values?organization_uid=${p.orgB.uid}`,
    },
    () => ({ t, p }),
  );
});

// ---------------------------------------------------------------------------------------------------
describe('preset receivables metrics', () => {
  /** An organization of its own with a hand-computed book of invoices (docs/metrics.md, "Worked example"). */
  let books: { organization_uid: string; user_uid: string; api_key: string };
  let p1: string;
  let p2: string;
  const AS_OF = '2025-03-15';
  const at = (day: string) => new Date(`${day}T12:00:00Z`);

  beforeAll(async () => {
    books = await initOrganization(t.db, t.config.apiKeyPepper, {
      organizationName: 'Books',
      email: `books-${tag()}@books.test`,
    });
    const org = books.organization_uid;
    const [c1, c2] = await t.db
      .insert(parties)
      .values([
        { organizationUid: org, name: 'Client One', role: 'client' },
        { organizationUid: org, name: 'Client Two', role: 'client' },
      ])
      .returning();
    p1 = c1!.uid;
    p2 = c2!.uid;
    let number = 0;
    const ar = (fields: {
      client: string;
      status: string;
      issued: string;
      due: string;
      amount: number;
      paid?: number;
      paidDate?: string;
      type?: 'ACCOUNTS_RECEIVABLE' | 'ACCOUNTS_PAYABLE';
      org?: string;
    }) => ({
      organizationUid: fields.org ?? org,
      invoiceType: fields.type ?? ('ACCOUNTS_RECEIVABLE' as const),
      invoiceNumber: `INV-${++number}-${tag()}`,
      status: fields.status,
      currency: 'USD',
      issueDate: at(fields.issued),
      dueDate: at(fields.due),
      paidDate: fields.paidDate ? at(fields.paidDate) : null,
      subtotalCents: fields.amount,
      totalCents: fields.amount,
      amountDueCents: fields.amount,
      amountPaidCents: fields.paid ?? 0,
      amountRemainingCents: fields.amount - (fields.paid ?? 0),
      clientPartyUid: fields.org ? null : fields.client,
    });
    const rows = await t.db
      .insert(invoices)
      .values([
        ar({ client: p1, status: 'open', issued: '2025-01-10', due: '2025-02-09', amount: 100_000 }), // 0: 34 days
        ar({
          client: p1,
          status: 'open',
          issued: '2025-02-20',
          due: '2025-03-01',
          amount: 50_000,
          paid: 20_000,
        }), // 1: 14 days
        ar({ client: p2, status: 'open', issued: '2025-03-10', due: '2025-04-09', amount: 80_000 }), // 2: current
        ar({ client: p2, status: 'open', issued: '2024-11-01', due: '2024-12-01', amount: 40_000 }), // 3: 104 days
        ar({
          client: p2,
          status: 'paid',
          issued: '2024-12-10',
          due: '2025-01-09',
          amount: 60_000,
          paid: 60_000,
          paidDate: '2025-02-20',
        }), // 4: settled 02-20
        ar({ client: p1, status: 'open', issued: '2024-12-01', due: '2024-12-31', amount: 10_000 }), // 5: 74 days
        // None of these count: issued after the day, draft, void, uncollectible, payable, another organization's.
        ar({ client: p1, status: 'open', issued: '2025-03-16', due: '2025-03-17', amount: 99_999 }),
        ar({ client: p1, status: 'draft', issued: '2025-03-01', due: '2025-03-02', amount: 90_000 }),
        ar({ client: p1, status: 'void', issued: '2025-01-01', due: '2025-01-02', amount: 90_000 }),
        ar({ client: p2, status: 'uncollectible', issued: '2025-01-01', due: '2025-01-02', amount: 90_000 }),
        ar({
          client: p2,
          status: 'received',
          issued: '2025-01-01',
          due: '2025-01-02',
          amount: 90_000,
          type: 'ACCOUNTS_PAYABLE',
        }),
        ar({
          client: p1,
          status: 'open',
          issued: '2025-01-01',
          due: '2025-01-02',
          amount: 90_000,
          org: p.orgA.uid,
        }),
      ])
      .returning({ uid: invoices.uid });
    await t.db.insert(invoicePayments).values([
      {
        organizationUid: org,
        invoiceUid: rows[1]!.uid,
        amountCents: 20_000,
        paidAt: at('2025-03-05'),
        createdByUserUid: books.user_uid,
      },
      {
        organizationUid: org,
        invoiceUid: rows[4]!.uid,
        amountCents: 60_000,
        paidAt: at('2025-02-20'),
        createdByUserUid: books.user_uid,
      },
    ]);
    // The presets every test here computes (the install test below works on an organization of its own).
    await installMetricPresets(t.db, org);
  });

  const booksSeries = async (metricUid: string, query: Record<string, string> = {}) => {
    const res = await series(metricUid, query, books.api_key);
    expect(res.status, res.raw).toBe(200);
    return res.body.data.items as {
      entity_uid: string;
      metric_date: string;
      value: number;
      _metadata: Record<string, unknown>;
    }[];
  };

  it('installs every preset definition once; a re-run adds nothing and keeps edits', async () => {
    const shelf = await initOrganization(t.db, t.config.apiKeyPepper, {
      organizationName: 'Shelf',
      email: `shelf-${tag()}@shelf.test`,
    });
    const first = await installMetricPresets(t.db, shelf.organization_uid);
    expect(first.installed).toEqual(PRESET_DEFINITIONS.map((d) => d.uid));
    expect(first.already_installed).toEqual([]);
    const renamed = await patchMetric('dso_countback', { name: 'Our DSO' }, shelf.api_key);
    expect(renamed.status, renamed.raw).toBe(200);
    const again = await installMetricPresets(t.db, shelf.organization_uid);
    expect(again).toEqual({
      organization_uid: shelf.organization_uid,
      installed: [],
      already_installed: PRESET_DEFINITIONS.map((d) => d.uid),
      conflicts: [],
    });
    const dso = (await getMetric('dso_countback', shelf.api_key)).body.data;
    expect(dso).toMatchObject({
      name: 'Our DSO',
      preset: 'dso_countback',
      value_type: 'days',
      is_snapshot: true,
      context_type: 'ORGANIZATION',
    });
    expect(dso.formula).toMatch(/Walk back/);
    const party = (await getMetric('client_overdue_amount_cents', shelf.api_key)).body.data;
    expect(party).toMatchObject({ context_type: 'PARTY', value_type: 'currency', storage_unit: 'cents' });
  });

  it('a uid the organization already uses for its own metric is reported as a conflict and left alone', async () => {
    await createMetric(p.orgA.admin.key, { uid: 'overdue_amount_cents', name: 'Mine', value_type: 'ratio' });
    const result = await installMetricPresets(t.db, p.orgA.uid);
    expect(result.conflicts).toEqual(['overdue_amount_cents']);
    expect(result.installed).toHaveLength(PRESET_DEFINITIONS.length - 1);
    expect((await getMetric('overdue_amount_cents')).body.data).toMatchObject({ name: 'Mine', preset: null });
    await expect(installMetricPresets(t.db, MISSING)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('computes the hand-computed values as of 2025-03-15, with their inputs in _metadata', async () => {
    const result = await computePresetValues(t.db, books.organization_uid, AS_OF);
    // 9 organization values + 2 party presets × 2 billed clients.
    expect(result).toEqual({
      organization_uid: books.organization_uid,
      metric_date: AS_OF,
      values_written: 13,
      skipped: [],
    });
    const value = async (uid: string, entity = books.organization_uid) => {
      const items = await booksSeries(uid, { entity_uid: entity, from: AS_OF, to: AS_OF });
      expect(items, uid).toHaveLength(1);
      return items[0]!;
    };
    expect((await value('overdue_amount_cents')).value).toBe(180_000);
    expect((await value('overdue_invoice_count')).value).toBe(4);
    expect((await value('aging_current_cents')).value).toBe(80_000);
    expect((await value('aging_1_30_cents')).value).toBe(30_000);
    expect((await value('aging_31_60_cents')).value).toBe(100_000);
    expect((await value('aging_61_90_cents')).value).toBe(10_000);
    expect((await value('aging_over_90_cents')).value).toBe(40_000);
    // 260,000 owed: March 1–15 sold 80,000 (+15 days), February 50,000 (+28), January 100,000 (+31),
    // December 70,000 covers the last 30,000: 31 × 30/70 = 13.29 → 87.29.
    const dso = await value('dso_countback');
    expect(dso.value).toBe(87.29);
    expect(dso._metadata).toMatchObject({
      preset: 'dso_countback',
      as_of: AS_OF,
      receivables_balance_cents: 260_000,
      fully_covered: true,
      computed_at: expect.stringMatching(ISO),
    });
    // (210,000 + 130,000 − 260,000) ÷ (210,000 + 130,000 − 80,000) × 100 = 30.77.
    const cei = await value('cei_trailing_30_days');
    expect(cei.value).toBe(30.77);
    expect(cei._metadata).toMatchObject({
      period_start: '2025-02-14',
      period_end: AS_OF,
      beginning_receivables_cents: 210_000,
      credit_sales_cents: 130_000,
      ending_total_receivables_cents: 260_000,
      ending_current_receivables_cents: 80_000,
    });
    expect((await value('overdue_amount_cents'))._metadata).toMatchObject({
      as_of: AS_OF,
      overdue_amount_cents: 180_000,
      overdue_invoice_count: 4,
      receivable_invoices: 6,
    });
    expect((await value('client_overdue_amount_cents', p1)).value).toBe(140_000);
    expect((await value('client_overdue_invoice_count', p1)).value).toBe(3);
    expect((await value('client_overdue_amount_cents', p2)).value).toBe(40_000);
    expect((await value('client_overdue_invoice_count', p2)).value).toBe(1);
    const point = await value('aging_current_cents');
    expect(point).toMatchObject({ time_unit: 'day', timezone: 'UTC', context_type: 'ORGANIZATION' });
  });

  it('a re-run replaces the same day’s values instead of adding rows; an inactive preset is not computed', async () => {
    const count = async () =>
      (
        await rawQuery<{ n: number }>(
          t.db,
          `select count(*)::int as n from metric_values where organization_uid = $1`,
          [books.organization_uid],
        )
      )[0]!.n;
    await computePresetValues(t.db, books.organization_uid, AS_OF);
    const before = await count();
    const again = await computePresetValues(t.db, books.organization_uid, AS_OF);
    expect(again.values_written).toBe(13);
    expect(await count()).toBe(before);
    expect((await booksSeries('overdue_amount_cents')).filter((v) => v.metric_date === AS_OF)).toHaveLength(
      1,
    );

    expect((await patchMetric('aging_over_90_cents', { is_active: false }, books.api_key)).status).toBe(200);
    const next = await computePresetValues(t.db, books.organization_uid, '2025-03-16');
    expect(next.values_written).toBe(12);
    expect(await booksSeries('aging_over_90_cents', { from: '2025-03-16', to: '2025-03-16' })).toEqual([]);
    expect((await patchMetric('aging_over_90_cents', { is_active: true }, books.api_key)).status).toBe(200);
  });

  it('reconstructs an earlier day from issue dates and payments', async () => {
    // 2025-02-13: invoices 0, 3, 4 and 5 were owed (100,000 + 40,000 + 60,000 + 10,000); all past due.
    await computePresetValues(t.db, books.organization_uid, '2025-02-13');
    const [overdue] = await booksSeries('overdue_amount_cents', { from: '2025-02-13', to: '2025-02-13' });
    expect(overdue!.value).toBe(210_000);
  });

  it('CEI without anything collectible in its window gets no value (and says why)', async () => {
    const result = await computePresetValues(t.db, books.organization_uid, '2020-01-31');
    expect(result.skipped).toEqual([
      { metric_uid: 'cei_trailing_30_days', entity_uid: books.organization_uid, reason: expect.any(String) },
    ]);
    expect(await booksSeries('cei_trailing_30_days', { from: '2020-01-31', to: '2020-01-31' })).toEqual([]);
    await expect(computePresetValues(t.db, MISSING, AS_OF)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('the daily job is scheduled at 00:15 UTC and computes the day that just ended for every organization', async () => {
    const [schedule] = await rawQuery<{ cron: string; timezone: string }>(
      t.db,
      `select cron, timezone from pgboss.schedule where name = $1`,
      [METRIC_PRESETS_QUEUE],
    );
    expect(schedule).toEqual({ cron: METRIC_PRESETS_CRON, timezone: 'UTC' });
    expect(METRIC_PRESETS_CRON).toBe('15 0 * * *');

    // Another organization with presets, so "every organization" means more than the books.
    const other = await initOrganization(t.db, t.config.apiKeyPepper, {
      organizationName: 'Other books',
      email: `other-${tag()}@books.test`,
    });
    await installMetricPresets(t.db, other.organization_uid);
    const errors: unknown[] = [];
    const summary = await runDailyPresetJob(t.db, new Date('2025-03-16T00:15:00Z'), (_org, e) =>
      errors.push(e),
    );
    expect(errors).toEqual([]);
    expect(summary).toMatchObject({ metric_date: AS_OF, failed: 0 });
    expect(summary.organizations).toBeGreaterThanOrEqual(2); // the books and the other
    const [cei] = await booksSeries('cei_trailing_30_days', { from: AS_OF, to: AS_OF });
    expect(cei!.value).toBe(30.77);
  });

  it('the queued job runs through the workers', async () => {
    // The job computes the UTC day before the one it runs in: yesterday (and, should midnight pass,
    // today too, since it then fills every day after the organization's mark).
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    // Every organization's days up to the one before yesterday count as done, so the run fills only
    // the day that just ended (the days it missed are metrics-compute.test.ts's).
    await rawQuery(
      t.db,
      `insert into metric_preset_states (organization_uid, computed_through)
       select distinct organization_uid, $1::date - 1 from metric_definitions where preset is not null
       on conflict (organization_uid) do update set computed_through = excluded.computed_through`,
      [yesterday],
    );
    await t.deps.jobs.enqueue(t.db, METRIC_PRESETS_QUEUE, {});
    // Read from the table: a read through the API would compute the day itself.
    const items = await until(async () => {
      const found = await rawQuery<{ value: number }>(
        t.db,
        `select value from metric_values
          where organization_uid = $1 and metric_uid = 'overdue_amount_cents' and metric_date = $2`,
        [books.organization_uid, yesterday],
      );
      return found.length > 0 && found;
    }, 'the preset job to run');
    expect(items).toHaveLength(1);
    // Every invoice of the book is long past due by now, the one issued on 03-16 included.
    expect(items[0]!.value).toBe(260_000 + 99_999);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('remit metrics presets / compute (the CLI, in-process)', () => {
  let processDb: ProcessDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    processDb = await processDatabase('remit-metrics-cli-');
    env = processDb.env;
  });
  afterAll(async () => processDb?.drop());

  function oneJsonObject(stdout: string): Record<string, unknown> {
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]!) as Record<string, unknown>;
  }

  it('init installs the presets; `metrics presets` then finds them all; `metrics compute` writes values', async () => {
    const init = await runCli(
      ['init', '--org', 'Cli Books', '--email', `cli-${tag()}@books.test`, '--json'],
      env,
    );
    expect(init.code, init.stderr).toBe(0);
    const created = oneJsonObject(init.stdout);
    expect(Object.keys(created).sort()).toEqual(['api_key', 'organization_uid', 'user_uid']);
    const org = created.organization_uid as string;

    const presets = await runCli(['metrics', 'presets', '--org', org, '--json'], env);
    expect(presets.code, presets.stderr).toBe(0);
    expect(oneJsonObject(presets.stdout)).toEqual({
      organization_uid: org,
      installed: [],
      already_installed: PRESET_DEFINITIONS.map((d) => d.uid),
      conflicts: [],
    });

    const human = await runCli(['metrics', 'presets', '--org', org], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(`Installed 0 preset metrics (${PRESET_DEFINITIONS.length} already there)`);

    const compute = await runCli(['metrics', 'compute', '--org', org, '--date', '2025-03-15', '--json'], env);
    expect(compute.code, compute.stderr).toBe(0);
    // No invoices: 8 organization values of 0, CEI without a value, no billed clients.
    expect(oneJsonObject(compute.stdout)).toEqual({
      organization_uid: org,
      metric_date: '2025-03-15',
      values_written: 8,
      skipped: [{ metric_uid: 'cei_trailing_30_days', entity_uid: org, reason: expect.any(String) }],
    });
  });

  it('usage errors exit 2; an unknown organization is not_found', async () => {
    const notUuid = await runCli(['metrics', 'presets', '--org', 'acme', '--json'], env);
    expect(notUuid.code).toBe(2);
    expect(oneJsonObject(notUuid.stdout)).toMatchObject({ error: { code: 'usage' } });
    const badDate = await runCli(
      ['metrics', 'compute', '--org', MISSING, '--date', '2025-02-30', '--json'],
      env,
    );
    expect(badDate.code).toBe(2);
    expect(oneJsonObject(badDate.stdout)).toEqual({
      error: { code: 'usage', message: '--date must be a date, YYYY-MM-DD' },
    });
    const missing = await runCli(['metrics', 'presets', '--org', MISSING, '--json'], env);
    expect(missing.code).toBe(1);
    expect(oneJsonObject(missing.stdout)).toEqual({
      error: { code: 'not_found', message: 'Organization not found' },
    });
    const noOrg = await runCli(['metrics', 'presets', '--json'], env);
    expect(noOrg.code).toBe(2);
  });
});
