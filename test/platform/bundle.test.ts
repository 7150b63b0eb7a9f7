import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROOT, startServer, type ServerProcess } from '../helpers/processes.ts';
import { uploadWithForm } from '../helpers/presigned-post.ts';
import { CONTENT_TYPES, xlsx } from '../helpers/sample-files.ts';
import { until } from '../helpers/until.ts';
import { engine } from '../helpers/test-database.ts';

/**
 * What `npm start` runs is the esbuild bundle (scripts/build.mjs); the run's processes start the run's
 * bundle (dist/, or one made from the sources as they are: test/helpers/test-bundle.ts). This test runs
 * it as `npm start` would, on the embedded
 * database, through the paths a bundle can break — migrations found from dist/, the fresh data
 * directory copied from the build's template, the CLI, Swagger UI's files (an external package), a
 * document read in the extraction thread (its own entry point), an invoice's PDF (pdfkit's font files),
 * and source maps that lead back to src/.
 */
describe.skipIf(engine !== 'pglite')('the bundled build (dist/)', () => {
  let out: string;
  let dataDir: string;
  let server: ServerProcess | undefined;

  beforeAll(() => {
    out = inject('bundleDir');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-bundle-'));
  });
  afterAll(() => {
    server?.child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts, migrates, serves the API and the docs, and extracts text in its thread', async () => {
    const init = spawnSync(
      process.execPath,
      [path.join(out, 'cli-main.js'), 'init', '--org', 'Bundle', '--email', 'admin@bundle.test', '--json'],
      { cwd: ROOT, encoding: 'utf8', env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' } },
    );
    expect(init.status, init.stderr).toBe(0);
    const { api_key: key, organization_uid: organizationUid } = JSON.parse(init.stdout) as {
      api_key: string;
      organization_uid: string;
    };

    // The fresh DATA_DIR was copied from the build's template, made by a real first start: the job
    // queue's schema and its queues are there before any server ran on it (a CLI alone never makes them).
    const { PGlite } = await import('@electric-sql/pglite');
    const lite = await PGlite.create({ dataDir: path.join(dataDir, 'pglite') });
    const queues = await lite.query<{ n: number }>('select count(*)::int as n from pgboss.queue');
    await lite.close();
    expect(queues.rows[0]!.n).toBeGreaterThan(5);

    server = await startServer({ DATA_DIR: dataDir });
    const api = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${server!.url}${url}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reads what it asserts
      return { status: res.status, body: (await res.json()) as { data: Record<string, any> } };
    };

    const me = await api('GET', '/api/me');
    expect(me.status).toBe(200);
    expect(me.body.data.user.email).toBe('admin@bundle.test');
    const docs = await fetch(`${server.url}/docs/static/index.html`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');

    const presigned = await api('POST', '/api/knowledge/presign', {
      filename: 'rates.xlsx',
      organization_uid: organizationUid,
      content_type: CONTENT_TYPES.xlsx,
    });
    expect(presigned.status).toBe(200);
    const upload = await uploadWithForm(presigned.body.data.presigned_post, {
      content: xlsx([['Quarterly bundle figures']]),
      type: CONTENT_TYPES.xlsx,
      filename: 'rates.xlsx',
    });
    expect(upload.status, upload.body).toBe(204);
    const uid = presigned.body.data.knowledge_document_uid as string;
    expect(
      (
        await api('POST', '/api/knowledge/confirm', {
          knowledge_document_uid: uid,
          organization_uid: organizationUid,
        })
      ).status,
    ).toBe(202);
    const settled = await until(async () => {
      const { data } = (await api('GET', `/api/knowledge/${uid}`)).body;
      return (data.status === 'ready' || data.status === 'failed') && data;
    }, 'the document to be read in the extraction thread');
    expect(settled.status).toBe('ready');

    // An invoice's PDF: pdfkit (an external package) reads its font metrics from its own folder.
    const invoice = await api('POST', '/api/invoices', {
      invoice_type: 'ACCOUNTS_RECEIVABLE',
      invoice_number: 'BUNDLE-1',
      currency: 'USD',
      tax_cents: 1234,
    });
    expect(invoice.status).toBe(201);
    const pdf = await fetch(`${server.url}/api/invoices/${invoice.body.data.uid}/pdf`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(pdf.status).toBe(200);
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    expect(
      Buffer.from(await pdf.arrayBuffer())
        .subarray(0, 5)
        .toString('latin1'),
    ).toBe('%PDF-');

    // Stack traces name the TypeScript source (`--enable-source-maps`, maps written beside the bundle).
    const map = JSON.parse(fs.readFileSync(path.join(out, 'server.js.map'), 'utf8')) as { sources: string[] };
    expect(map.sources.some((source) => source.endsWith('src/server.ts'))).toBe(true);

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    server = undefined;
  }, 120_000);
});

/**
 * What a start loads is what server.js imports statically, plus server-main, which it imports once the
 * tracing preload ran. Swagger UI and ioredis are behind dynamic imports (src/platform/http/api-docs.ts,
 * rate-limit.ts): a start that never serves the docs, or has no REDIS_URL, does not load them.
 */
describe('what a start of the bundle loads', () => {
  it('neither ioredis nor Swagger UI', () => {
    const out = inject('bundleDir');
    const read = (file: string) => fs.readFileSync(path.join(out, file), 'utf8');
    const chunks = fs.readdirSync(out).filter((file) => file.endsWith('.js'));
    const startChunks = new Set<string>();
    // The bundle is minified: statements share lines, and only the source maps still name the inputs.
    const staticImport = /(?:^|[;}\n])\s*(?:import|export)\s*(?:[\w*${}\s,]+from\s*)?["']\.\/([^"']+)["']/g;
    const follow = (file: string) => {
      if (startChunks.has(file)) return;
      startChunks.add(file);
      for (const [, chunk] of read(file).matchAll(staticImport)) follow(chunk!);
    };
    follow('server.js');
    for (const [, chunk] of read('server.js').matchAll(/await import\(["']\.\/([^"']+)["']\)/g))
      follow(chunk!);
    expect(startChunks.size).toBeGreaterThan(2);

    const sources = (file: string) => (JSON.parse(read(`${file}.map`)) as { sources: string[] }).sources;
    const ioredis = chunks.filter((file) =>
      sources(file).some((source) => source.endsWith('node_modules/ioredis/built/Redis.js')),
    );
    expect(ioredis).toHaveLength(1);
    expect(startChunks.has(ioredis[0]!)).toBe(false);
    const swaggerUi = [...startChunks].filter((file) =>
      /(?:^|[;}\n])\s*import\s*(?:[\w*${}\s,]+from\s*)?["']@fastify\/swagger-ui["']|require\(["']@fastify\/swagger-ui["']\)/.test(
        read(file),
      ),
    );
    expect(swaggerUi).toEqual([]);
  });
});
