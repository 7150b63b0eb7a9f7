import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { createTextGenerator, type EmailCompositionRequest } from '../../src/platform/llm/text-generator.ts';
import { mailerFor, type OutgoingMail } from '../../src/platform/mail/mailer.ts';
import { startMetricsServer } from '../../src/platform/observability/metrics.routes.ts';
import { S3ObjectStorage } from '../../src/platform/storage/s3-storage.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakeLlm } from '../helpers/fake-llm.ts';
import { FakePartner } from '../helpers/fake-partner.ts';
import { FakeSlack } from '../helpers/fake-slack.ts';
import { FakeSmtp } from '../helpers/fake-smtp.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { sampleValue } from '../helpers/prometheus.ts';
import { engine } from '../helpers/test-database.ts';

/**
 * `GET /metrics` (docs/observability.md): refused without the token, Prometheus text with it, and the
 * request, job, outside-call, pool and process metrics in it after the thing they count happened.
 */
const TOKEN = `metrics-${crypto.randomBytes(12).toString('hex')}`;
const CHANNEL = 'C0METRICS';

let t: TestApp;
let p: Principals;
let slack: FakeSlack;
let partner: FakePartner;

beforeAll(async () => {
  slack = await new FakeSlack().start();
  slack.channel(CHANNEL, true);
  partner = await FakePartner.start(`whsec_${crypto.randomBytes(16).toString('hex')}`);
  t = await createTestApp({
    env: { METRICS_TOKEN: TOKEN, ...slack.env(), SLACK_TIMEOUT_MS: '5000' },
    workers: true,
  });
  p = await createPrincipals(t);
});
afterAll(async () => {
  await t?.close();
  await slack?.close();
  await partner?.close();
});

const scrape = async () => {
  const res = await call(t.app, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status, res.raw).toBe(200);
  return res.raw;
};

/** Scrapes until `name{labels}` is there (jobs and calls finish on their own time), then returns it. */
async function eventually(name: string, labels: Record<string, string>): Promise<number> {
  return vi.waitFor(
    async () => {
      const value = sampleValue(await scrape(), name, labels);
      if (value === undefined) throw new Error(`no ${name} ${JSON.stringify(labels)} yet`);
      return value;
    },
    { timeout: 20_000, interval: 100 },
  );
}

describe('GET /metrics protection (METRICS_TOKEN)', () => {
  it('no token, a wrong token, another scheme, an API key: 401 in the one error body', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${TOKEN.slice(0, -1)}x` },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Basic ${Buffer.from(`metrics:${TOKEN}`).toString('base64')}` },
      { authorization: `Bearer ${p.orgA.admin.key}` },
      { authorization: `Bearer  ${TOKEN}` },
    ];
    for (const headers of attempts) {
      const res = await call(t.app, 'GET', '/metrics', { headers });
      const body = expectErrorBody(res, 401, 'unauthorized');
      expect(body.message).toMatch(/metrics token/);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="metrics"');
      expect(res.raw).not.toContain('remit_');
    }
  });

  it('the token: 200, Prometheus text; no API key needed and no rate limit spent', async () => {
    const res = await call(t.app, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.raw).toMatch(/^# HELP /m);
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });

  it('is not in the OpenAPI document', async () => {
    const doc = (await call(t.app, 'GET', '/api/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).not.toContain('/metrics');
    expect(Object.keys(doc.paths)).toContain('/healthz');
  });

  it('without METRICS_TOKEN and METRICS_PORT nothing is collected and the API port has no /metrics', async () => {
    const config = {
      ...t.config,
      metrics: { enabled: false, token: undefined, port: undefined, host: '127.0.0.1' },
    };
    const app = await buildApp({ ...t.deps, config, metrics: undefined }, { logger: false });
    try {
      expectErrorBody(await call(app, 'GET', '/metrics'), 404, 'route_not_found');
      expectErrorBody(
        await call(app, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } }),
        404,
        'route_not_found',
      );
    } finally {
      await app.close();
    }
  });

  it('with METRICS_PORT the API port does not serve them; that port does, token and all', async () => {
    const config = { ...t.config, metrics: { ...t.config.metrics, port: 0 } };
    const app = await buildApp({ ...t.deps, config }, { logger: false });
    try {
      const res = await call(app, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
      expectErrorBody(res, 404, 'route_not_found');
    } finally {
      await app.close();
    }
    const server = await startMetricsServer(t.deps.metrics!, { port: 0, host: '127.0.0.1', token: TOKEN });
    try {
      const url = `http://127.0.0.1:${server.port}`;
      const refused = await fetch(`${url}/metrics`);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ status: 'error', status_code: 401, code: 'unauthorized' });
      const wrong = await fetch(`${url}/metrics`, {
        headers: { authorization: 'Bearer nope-nope-nope-nope' },
      });
      expect(wrong.status).toBe(401);
      const ok = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(await ok.text()).toContain('remit_http_request_duration_seconds');
      const elsewhere = await fetch(`${url}/api/me`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(elsewhere.status).toBe(404);
      expect(await elsewhere.json()).toMatchObject({ code: 'route_not_found' });
      const post = await fetch(`${url}/metrics`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(post.status).toBe(405);
    } finally {
      await server.close();
    }
    // Without a token the port answers anyone who can reach it (127.0.0.1 unless METRICS_HOST).
    const open = await startMetricsServer(t.deps.metrics!, { port: 0, host: '127.0.0.1', token: undefined });
    try {
      expect((await fetch(`http://127.0.0.1:${open.port}/metrics`)).status).toBe(200);
    } finally {
      await open.close();
    }
  });
});

describe('what /metrics counts', () => {
  it('requests by method, route template and status; never the raw URL', async () => {
    const uid = crypto.randomUUID();
    const missing = await call(t.app, 'GET', `/api/invoices/${uid}`, { key: p.orgA.admin.key });
    expect(missing.status).toBe(404);
    await call(t.app, 'GET', '/api/me', { key: p.orgA.admin.key });
    await call(t.app, 'GET', `/no/such/route/${uid}`);
    const text = await scrape();
    const count = (route: string, status: string, method = 'GET') =>
      sampleValue(text, 'remit_http_request_duration_seconds_count', { method, route, status_code: status });
    expect(count('/api/invoices/:uid', '404')).toBeGreaterThanOrEqual(1);
    expect(count('/api/me', '200')).toBeGreaterThanOrEqual(1);
    expect(count('unmatched', '404')).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(text, 'remit_http_request_duration_seconds_bucket', {
        route: '/api/me',
        status_code: '200',
        le: '+Inf',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(uid);
  });

  it('the database pool and the process (event-loop lag, heap, RSS)', async () => {
    const text = await scrape();
    const max = sampleValue(text, 'remit_db_pool_max', { engine });
    expect(max).toBe(engine === 'pglite' ? 1 : t.database.poolStats().max);
    expect(sampleValue(text, 'remit_db_pool_connections', { engine })).toBeGreaterThanOrEqual(
      engine === 'pglite' ? 1 : 0,
    );
    expect(sampleValue(text, 'remit_db_pool_idle', { engine })).toBeGreaterThanOrEqual(0);
    // Background workers share the pool, so how many wait at a random moment is theirs to say; a
    // saturated pool is tested below.
    expect(Number.isInteger(sampleValue(text, 'remit_db_pool_waiting', { engine }))).toBe(true);
    expect(sampleValue(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sampleValue(text, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
    expect(sampleValue(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(sampleValue(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it.runIf(engine === 'postgres')('a query waiting for a connection is counted while it waits', async () => {
    const pool = t.database.pool!;
    const held = await Promise.all(Array.from({ length: t.database.poolStats().max }, () => pool.connect()));
    const queued = pool.query('select 1');
    try {
      expect(sampleValue(await scrape(), 'remit_db_pool_waiting', { engine })).toBeGreaterThanOrEqual(1);
      expect(sampleValue(await scrape(), 'remit_db_pool_idle', { engine })).toBe(0);
    } finally {
      for (const client of held) client.release();
    }
    await queued;
  });

  it('jobs by queue and outcome, with their durations', async () => {
    const ok = `remit.test.metrics-ok-${crypto.randomBytes(3).toString('hex')}`;
    const failing = `remit.test.metrics-fail-${crypto.randomBytes(3).toString('hex')}`;
    await t.deps.jobs.define(ok, async () => undefined);
    await t.deps.jobs.define(failing, async () => {
      throw new Error('this job fails');
    });
    await t.deps.jobs.enqueue(t.db, ok, { organization_uid: p.orgA.uid });
    await t.deps.jobs.enqueue(t.db, failing, {}, { retryLimit: 0 });
    expect(await eventually('remit_job_duration_seconds_count', { queue: ok, outcome: 'completed' })).toBe(1);
    expect(await eventually('remit_job_duration_seconds_count', { queue: failing, outcome: 'failed' })).toBe(
      1,
    );
    const text = await scrape();
    expect(
      sampleValue(text, 'remit_job_duration_seconds_bucket', { queue: ok, outcome: 'completed', le: '+Inf' }),
    ).toBe(1);
    expect(
      sampleValue(text, 'remit_job_duration_seconds_sum', { queue: ok, outcome: 'completed' }),
    ).toBeGreaterThan(0);
  });

  it('Slack calls by method and outcome (a refusal is an error)', async () => {
    const created = await call(t.app, 'POST', '/api/agents', {
      key: p.orgA.admin.key,
      body: { name: 'Metered', notification_config: { chat_channel_id: CHANNEL } },
    });
    expect(created.status, created.raw).toBe(201);
    const refused = await call(t.app, 'POST', '/api/agents', {
      key: p.orgA.admin.key,
      body: { name: 'Nowhere', notification_config: { chat_channel_id: 'C0UNKNOWN' } },
    });
    expect(refused.status).toBe(422);
    const text = await scrape();
    const calls = (outcome: string) =>
      sampleValue(text, 'remit_outbound_request_duration_seconds_count', {
        target: 'slack',
        operation: 'conversations.info',
        outcome,
      });
    expect(calls('ok')).toBe(1);
    expect(calls('error')).toBe(1);
  });

  it('billing partner calls by outcome (an HTTP error status is an error)', async () => {
    const configured = await call(t.app, 'PUT', `/api/organization/${p.orgB.uid}/integrations/billing`, {
      key: p.orgB.admin.key,
      body: { type: 'http', url: partner.url(), secret: partner.secret },
    });
    expect(configured.status, configured.raw).toBe(201);
    const created = await call(t.app, 'POST', '/api/invoices', {
      key: p.orgB.admin.key,
      body: { invoice_type: 'ACCOUNTS_RECEIVABLE', invoice_number: 'MET-1', currency: 'USD' },
    });
    expect(created.status, created.raw).toBe(201);
    const uid = created.body.data.uid as string;
    const synced = await call(t.app, 'PUT', `/api/invoices/${uid}`, {
      key: p.orgB.admin.key,
      body: { invoice_number: 'MET-2' },
    });
    expect(synced.status, synced.raw).toBe(200);
    partner.next({ kind: 'fail', status: 500 });
    const failed = await call(t.app, 'PUT', `/api/invoices/${uid}`, {
      key: p.orgB.admin.key,
      body: { invoice_number: 'MET-3' },
    });
    expect(failed.status).toBe(502);
    const text = await scrape();
    const calls = (outcome: string) =>
      sampleValue(text, 'remit_outbound_request_duration_seconds_count', {
        target: 'partner',
        operation: 'PUT',
        outcome,
      });
    expect(calls('ok')).toBeGreaterThanOrEqual(1);
    expect(calls('error')).toBe(1);
  });
});

describe('the other outside services, timed where their clients call them', () => {
  const outbound = (text: string, target: string, operation: string, outcome: string) =>
    sampleValue(text, 'remit_outbound_request_duration_seconds_count', { target, operation, outcome });

  it('SMTP sends: accepted is ok, refused is an error', async () => {
    const smtp = await new FakeSmtp().start();
    try {
      const mailer = mailerFor(null, {
        smtpUrl: smtp.url(),
        outboxDir: os.tmpdir(),
        allowPrivateNetworkTargets: true,
        metrics: t.deps.metrics,
      });
      const mail: OutgoingMail = {
        messageId: `<${crypto.randomUUID()}@acme.test>`,
        from: { address: 'ar@acme.test' },
        to: ['client@example.test'],
        cc: [],
        bcc: [],
        subject: 'Invoice',
        text: 'Please pay.',
        html: '',
        attachments: [],
      };
      await mailer.send(mail);
      smtp.behaviour = { kind: 'reject', code: 550, message: 'mailbox unavailable' };
      await expect(
        mailer.send({ ...mail, messageId: `<${crypto.randomUUID()}@acme.test>` }),
      ).rejects.toThrow();
    } finally {
      await smtp.stop();
    }
    const text = await scrape();
    expect(outbound(text, 'smtp', 'send', 'ok')).toBe(1);
    expect(outbound(text, 'smtp', 'send', 'error')).toBe(1);
  });

  it('LLM completions: answered is ok, an HTTP error is an error, no answer in time is a timeout', async () => {
    const llm = await new FakeLlm().start();
    try {
      const generator = createTextGenerator(
        { kind: 'openai', baseUrl: llm.baseUrl, apiKey: 'sk-test', model: 'test-model', timeoutMs: 300 },
        t.deps.metrics,
      );
      const request: EmailCompositionRequest = {
        context_type: 'invoice',
        facts: {
          invoice_number: 'INV-1',
          status: 'open',
          currency: 'USD',
          amount_due: '$10.00',
          total: '$10.00',
          issue_date: null,
          due_date: null,
          days_overdue: 0,
          days_until_due: null,
          is_settled: false,
          client_name: 'Client',
          payment_link: null,
          organization_name: 'Acme',
          current_date: 'January 1, 2026',
        },
      };
      await generator.composeEmail(request);
      llm.behaviour = { kind: 'fail', status: 500 };
      await expect(generator.composeEmail(request)).rejects.toThrow(/HTTP 500/);
      llm.behaviour = { kind: 'hang' };
      await expect(generator.composeEmail(request)).rejects.toThrow(/did not answer/);
    } finally {
      await llm.close();
    }
    const text = await scrape();
    expect(outbound(text, 'llm', 'chat.completions', 'ok')).toBe(1);
    expect(outbound(text, 'llm', 'chat.completions', 'error')).toBe(1);
    expect(outbound(text, 'llm', 'chat.completions', 'timeout')).toBe(1);
  });

  it('S3 calls by operation, once per HTTP attempt; presigning a URL calls nobody and is not counted', async () => {
    // Just enough of an S3 API: PutObject stores, HeadObject of anything else is 404; the first
    // request for `flaky.txt` answers 503, which the SDK retries.
    const stored = new Set<string>();
    let flaky = true;
    const s3 = http.createServer((req, res) => {
      const path = new URL(req.url!, 'http://s3').pathname;
      req.resume();
      req.on('end', () => {
        if (req.method === 'PUT') {
          stored.add(path);
          res.writeHead(200, { etag: '"0123"' }).end();
        } else if (path.endsWith('/flaky.txt') && flaky) {
          flaky = false;
          res.writeHead(503).end();
        } else res.writeHead(stored.has(path) ? 200 : 404).end();
      });
    });
    await new Promise<void>((resolve) => s3.listen(0, '127.0.0.1', resolve));
    const storage = new S3ObjectStorage(
      {
        kind: 's3',
        endpoint: `http://127.0.0.1:${(s3.address() as AddressInfo).port}`,
        bucket: 'remit-metrics',
        region: 'us-east-1',
        accessKeyId: 'AKIATEST',
        secretAccessKey: 'secret-test',
      },
      t.deps.metrics,
    );
    try {
      await storage.putObject('org/doc.txt', Buffer.from('hello'), { contentType: 'text/plain' });
      await storage.putObject('org/flaky.txt', Buffer.from('hello'), { contentType: 'text/plain' });
      expect(await storage.headObject('org/missing.txt')).toBeNull();
      expect(await storage.headObject('org/flaky.txt')).toMatchObject({ size: 0 });
      await storage.presignedGetUrl('org/doc.txt', { expiresInSeconds: 60 });
    } finally {
      await storage.close();
      await new Promise<void>((resolve) => s3.close(() => resolve()));
    }
    const text = await scrape();
    expect(outbound(text, 's3', 'PutObject', 'ok')).toBe(2);
    expect(outbound(text, 's3', 'HeadObject', 'error')).toBe(2);
    expect(outbound(text, 's3', 'HeadObject', 'ok')).toBe(1);
    expect(text).not.toContain('operation="GetObject"');
  });
});
