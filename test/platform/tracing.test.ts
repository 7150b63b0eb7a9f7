import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { FakeSlack } from '../helpers/fake-slack.ts';
import { OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { runCli } from '../helpers/cli.ts';
import { startServer, startWorker, type ServerProcess } from '../helpers/processes.ts';
import { adminQuery, engine, testDatabaseUrl, withDatabaseName } from '../helpers/test-database.ts';

/**
 * OpenTelemetry traces (docs/observability.md#traces) from a real server process to a local OTLP/HTTP
 * receiver: the HTTP server span named after the route, the database statements and outside calls
 * under it in the same trace, the caller's W3C trace context honoured, and what is buffered sent when
 * the process stops on SIGTERM.
 */
// OTLP's span kinds.
const SERVER_KIND = 2;
const CONSUMER_KIND = 5;
const CHANNEL = 'C0TRACED';

describe('tracing over OTLP/HTTP', { timeout: 180_000 }, () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('requests, their statements and Slack calls in one trace, jobs in their own; flushed on SIGTERM', async () => {
    const receiver = await new OtlpReceiver().start();
    cleanups.push(() => receiver.close());
    const slack = await new FakeSlack().start();
    slack.channel(CHANNEL, true);
    cleanups.push(() => slack.close());

    const env: Record<string, string> = {};
    if (engine === 'postgres') {
      const name = `remit_trace_${crypto.randomBytes(5).toString('hex')}`;
      await adminQuery(`create database ${name}`);
      env.DATABASE_URL = withDatabaseName(testDatabaseUrl!, name);
      cleanups.push(() => adminQuery(`drop database if exists ${name} with (force)`));
    } else {
      env.DATA_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-trace-'));
      cleanups.push(() => fs.rmSync(env.DATA_DIR!, { recursive: true, force: true }));
    }
    const init = await runCli(['init', '--org', 'Acme', '--email', 'admin@acme.test', '--json'], env);
    expect(init.code, init.stderr).toBe(0);
    const { api_key: key, organization_uid: org } = JSON.parse(init.stdout) as Record<string, string>;

    const server: ServerProcess = await startServer({
      ...env,
      ...slack.env(),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'remit-under-test',
      // The SDK's own variable: no batch leaves on its timer during the test, only the shutdown's flush.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    cleanups.push(() => void server.child.kill('SIGKILL'));

    // The caller's own trace: the server's span must continue it.
    const callerTrace = crypto.randomBytes(16).toString('hex');
    const callerSpan = crypto.randomBytes(8).toString('hex');
    const listed = await fetch(`${server.url}/api/organization/${org}/ar-invoices?per_page=5`, {
      headers: { authorization: `Bearer ${key}`, traceparent: `00-${callerTrace}-${callerSpan}-01` },
    });
    expect(listed.status).toBe(200);
    const created = await fetch(`${server.url}/api/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      // The built-in type: a run of an outside runtime's type would wait, pending, to be claimed.
      body: JSON.stringify({
        name: 'Traced',
        agent_type: 'collections',
        notification_config: { chat_channel_id: CHANNEL },
      }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    // A (sandbox) run of that agent: a job the server's own worker executes.
    const agentUid = ((await created.json()) as { data: { uid: string } }).data.uid;
    const started = await fetch(`${server.url}/api/agents/${agentUid}/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sandbox: true }),
    });
    expect(started.status).toBe(202);
    const runUid = ((await started.json()) as { data: { id: string } }).data.id;
    await vi.waitFor(
      async () => {
        const run = await fetch(`${server.url}/api/agent-runs/${runUid}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        const status = ((await run.json()) as { data: { attributes: { status: string } } }).data.attributes
          .status;
        if (status === 'pending' || status === 'running') throw new Error(`run ${status}`);
      },
      { timeout: 60_000, interval: 200 },
    );
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    // A presigned download's signature is a credential: not in the spans either.
    const signature = crypto.randomBytes(32).toString('hex');
    const download = await fetch(
      `${server.url}/storage/remit/x/y.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20260101&X-Amz-Date=20260101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=${signature}`,
    );
    expect(download.status).toBeGreaterThanOrEqual(400);

    expect(receiver.posts, 'nothing sent before the shutdown').toEqual([]);
    server.child.kill('SIGTERM');
    expect(await server.exited, server.output()).toBe(0);

    const spans = receiver.spans();
    expect(receiver.posts.every((p) => p.path === '/v1/traces')).toBe(true);
    expect(receiver.posts.every((p) => p.contentType === 'application/json')).toBe(true);
    expect(spans.every((s) => s.resource['service.name'] === 'remit-under-test')).toBe(true);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    /** Whether `span` lies under `ancestor`, following parents within the trace. */
    const under = (span: ReceivedSpan, ancestor: ReceivedSpan) => {
      for (let at = byId.get(span.parentSpanId ?? ''); at; at = byId.get(at.parentSpanId ?? '')) {
        if (at.spanId === ancestor.spanId) return true;
      }
      return false;
    };

    // The list: a server span named by its route template, continuing the caller's trace.
    const list = spans.find((s) => s.name === 'GET /api/organization/:organization_uid/ar-invoices');
    expect(list, spans.map((s) => s.name).join(', ')).toBeDefined();
    expect(list).toMatchObject({ kind: SERVER_KIND, traceId: callerTrace, parentSpanId: callerSpan });
    expect(list!.attributes['http.route']).toBe('/api/organization/:organization_uid/ar-invoices');
    // …with its statements under it: authentication and the list's reads.
    const statement = engine === 'postgres' ? /^pg\.query/ : /^pglite\.query/;
    const statements = spans.filter((s) => statement.test(s.name) && s.traceId === callerTrace);
    expect(statements.length).toBeGreaterThanOrEqual(2);
    for (const s of statements) expect(under(s, list!), s.name).toBe(true);
    expect(statements.some((s) => String(s.attributes['db.statement']).includes('remit_authenticate'))).toBe(
      true,
    );

    // The agent: the Slack channel check is a span of its own with the HTTP call under it.
    const create = spans.find((s) => s.name === 'POST /api/agents' && s.kind === SERVER_KIND);
    expect(create).toBeDefined();
    const check = spans.find((s) => s.name === 'slack conversations.info');
    expect(check).toMatchObject({ traceId: create!.traceId });
    expect(check!.attributes).toMatchObject({
      'remit.outbound.target': 'slack',
      'remit.outbound.outcome': 'ok',
    });
    expect(under(check!, create!)).toBe(true);
    const fetchSpan = spans.find((s) => s.scope.includes('undici') && s.parentSpanId === check!.spanId);
    expect(fetchSpan, 'the fetch to Slack, under the check').toBeDefined();
    // The Slack fake saw the trace context go out with the call.
    const asked = slack.requestsFor('conversations.info').at(-1)!;
    expect(asked.headers.traceparent).toContain(create!.traceId);

    // The run's job: a trace of its own, its statements under it.
    const job = spans.find((s) => s.name === 'job remit.agent.run');
    expect(job).toMatchObject({ kind: CONSUMER_KIND });
    expect(job!.parentSpanId ?? '').toBe('');
    expect(job!.attributes).toMatchObject({
      'messaging.system': 'pg-boss',
      'messaging.destination.name': 'remit.agent.run',
    });
    expect(spans.filter((s) => statement.test(s.name) && under(s, job!)).length).toBeGreaterThan(0);

    const downloadSpan = spans.find((s) => s.kind === SERVER_KIND && s.name.startsWith('GET /storage/'));
    expect(downloadSpan?.attributes['http.target']).toContain('X-Amz-Signature=[redacted]');
    expect(JSON.stringify(receiver.posts)).not.toContain(signature);

    // Probes are not traced; neither are the exporter's own posts.
    expect(spans.some((s) => s.name.includes('/readyz'))).toBe(false);
    expect(
      spans.some((s) => String(s.attributes['url.full'] ?? s.attributes['http.url']).includes('/v1/traces')),
    ).toBe(false);
  });

  // A worker beside a server needs PostgreSQL (the embedded database has one process).
  it.skipIf(engine !== 'postgres')('a `remit worker` process traces the jobs it works', async () => {
    const receiver = await new OtlpReceiver().start();
    cleanups.push(() => receiver.close());
    const name = `remit_trace_${crypto.randomBytes(5).toString('hex')}`;
    await adminQuery(`create database ${name}`);
    cleanups.push(() => adminQuery(`drop database if exists ${name} with (force)`));
    const env = { DATABASE_URL: withDatabaseName(testDatabaseUrl!, name) };
    const init = await runCli(['init', '--org', 'Acme', '--email', 'admin@acme.test', '--json'], env);
    expect(init.code, init.stderr).toBe(0);
    const { api_key: key } = JSON.parse(init.stdout) as Record<string, string>;

    // The API enqueues and traces nothing; the worker works the job and traces it.
    const server = await startServer({ ...env, RUN_WORKERS: 'false' });
    cleanups.push(() => void server.child.kill('SIGKILL'));
    const worker = await startWorker({
      ...env,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'remit-worker-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    cleanups.push(() => void worker.child.kill('SIGKILL'));
    expect(worker.output()).toContain('tracing: spans sent over OTLP/HTTP');

    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.url}/api/agents`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: 'Traced by the worker', agent_type: 'collections' }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const agentUid = ((await created.json()) as { data: { uid: string } }).data.uid;
    const started = await fetch(`${server.url}/api/agents/${agentUid}/runs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ sandbox: true }),
    });
    expect(started.status).toBe(202);
    const runUid = ((await started.json()) as { data: { id: string } }).data.id;
    await vi.waitFor(
      async () => {
        const run = await fetch(`${server.url}/api/agent-runs/${runUid}`, { headers: auth });
        const status = ((await run.json()) as { data: { attributes: { status: string } } }).data.attributes
          .status;
        if (status === 'pending' || status === 'running') throw new Error(`run ${status}`);
      },
      { timeout: 60_000, interval: 200 },
    );

    expect(receiver.posts, 'nothing sent before the shutdown').toEqual([]);
    worker.child.kill('SIGTERM');
    expect(await worker.exited, worker.output()).toBe(0);

    const spans = receiver.spans();
    expect(spans.length).toBeGreaterThan(0);
    expect(spans.every((s) => s.resource['service.name'] === 'remit-worker-under-test')).toBe(true);
    const job = spans.find((s) => s.name === 'job remit.agent.run');
    expect(job, spans.map((s) => s.name).join(', ')).toMatchObject({ kind: CONSUMER_KIND });
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const underJob = (span: ReceivedSpan) => {
      for (let at = byId.get(span.parentSpanId ?? ''); at; at = byId.get(at.parentSpanId ?? '')) {
        if (at.spanId === job!.spanId) return true;
      }
      return false;
    };
    // pg is instrumented in the worker too: the job's statements are under it.
    expect(spans.filter((s) => /^pg\.query/.test(s.name) && underJob(s)).length).toBeGreaterThan(0);
  });
});
