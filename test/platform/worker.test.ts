import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freePort,
  startServer,
  startWorker,
  type ServerProcess,
  type WorkerProcess,
} from '../helpers/processes.ts';
import { runCli } from '../helpers/cli.ts';
import { until } from '../helpers/until.ts';
import { engine } from '../helpers/test-database.ts';

/**
 * `remit worker` on the embedded database, as real processes: it refuses to start while the server owns
 * DATA_DIR (and says why); a server with RUN_WORKERS=false enqueues without working; a worker started
 * on the same DATA_DIR afterwards works what was queued, and stops on SIGTERM with exit 0. The
 * multi-process run on PostgreSQL is `worker-processes.test.ts`.
 */
describe.skipIf(engine !== 'pglite')('remit worker on the embedded database', () => {
  let dataDir: string;
  let server: ServerProcess | undefined;
  let worker: WorkerProcess | undefined;

  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-worker-'));
  });
  afterAll(() => {
    server?.child.kill('SIGKILL');
    worker?.child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('an API-only server enqueues; the worker refuses beside it, then works the queue alone', async () => {
    const init = await runCli(['init', '--org', 'Acme', '--email', 'admin@acme.test', '--json'], {
      DATA_DIR: dataDir,
    });
    expect(init.code, init.stderr).toBe(0);
    const { api_key: key, organization_uid: orgUid } = JSON.parse(init.stdout) as {
      api_key: string;
      organization_uid: string;
    };

    server = await startServer({ DATA_DIR: dataDir, RUN_WORKERS: 'false' });
    expect(server.output()).toContain('RUN_WORKERS=false with the embedded database');
    const api = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${server!.url}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
      });
      const json = (await res.json()) as { data?: { uid: string }; uid?: string; status?: string };
      expect(res.status, JSON.stringify(json)).toBeLessThan(300);
      return json;
    };
    const account = await api('POST', '/api/email/accounts', { email: 'ar@acme.test', display_name: 'AR' });
    const draft = await api('POST', '/api/email/drafts', {
      from_account_id: account.data!.uid,
      to: ['client@client.test'],
      subject: 'Reminder',
      body_text: 'Please pay.',
      planned_send_at: new Date().toISOString(),
    });

    const refused = await runCli(['worker'], { DATA_DIR: dataDir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is in use by another Remit process \(pid \d+ .*"remit server"/);
    expect(refused.stderr).toContain('separate worker processes need PostgreSQL (DATABASE_URL)');

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    server = undefined;
    // The API-only server never fetched the send job.
    expect(fs.existsSync(path.join(dataDir, 'outbox'))).toBe(false);

    const metricsPort = await freePort();
    worker = await startWorker({ DATA_DIR: dataDir, METRICS_PORT: String(metricsPort) });
    const outbox = path.join(dataDir, 'outbox', `${draft.uid}@acme.test.eml`);
    await until(async () => fs.existsSync(outbox), 'the worker to send the draft', 30_000);
    // A worker has no API port: its job metrics are served on METRICS_PORT.
    const scraped = await until(async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return text.includes('queue="remit.email.send"') ? text : undefined;
    }, "the send job's metric on the worker's metrics port");
    expect(scraped).toMatch(/^remit_job_duration_seconds_count\{[^}]*queue="remit\.email\.send"[^}]*\} 1$/m);
    // Beside the worker, as beside the server, the CLI's commands run in the process that owns DATA_DIR.
    const beside = await runCli(['users', 'create', '--org', orgUid, '--email', 'bo@acme.test', '--json'], {
      DATA_DIR: dataDir,
    });
    expect(beside.code, beside.stderr).toBe(0);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'admin.sock'))).toBe(false);
    const lines = worker
      .output()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; draft_uid?: string; result?: string });
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'email send', draft_uid: draft.uid, result: 'sent' }),
    );
    expect(lines.at(-1)).toMatchObject({ msg: 'stopped' });
    worker = undefined;
  }, 120_000);
});
