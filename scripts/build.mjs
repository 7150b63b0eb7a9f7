// `npm run build`: bundles the server, the CLI and the extraction thread into dist/ with esbuild, one
// file per entry point plus shared chunks. A bundle starts faster than tsc's one file per module: Node 20
// has no compile cache, and resolving and reading Fastify's, Ajv's and our ≈ 150 files was a third of a
// start (docs/performance.md#start-and-footprint). Type checking is `npm run typecheck`, not the build.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * Loaded from node_modules at run time, not bundled:
 * - `pg`: OpenTelemetry's instrumentation patches it as it is loaded (tracing-preload.ts);
 * - packages that read files of their own beside their code (PGlite's WebAssembly, Swagger UI's pages,
 *   piscina's and pino's worker files) or are native (argon2);
 * - what is imported only on first use (the AWS SDK, the LLM client, nodemailer, the document
 *   extractors, OpenTelemetry, prom-client): bundling them would only make the build and dist/ bigger.
 */
export const EXTERNAL = [
  'pg',
  'pg-*',
  '@electric-sql/pglite',
  '@electric-sql/pglite/*',
  '@fastify/swagger-ui',
  'piscina',
  'pino',
  'thread-stream',
  '@node-rs/*',
  '@aws-sdk/*',
  'openai',
  'nodemailer',
  'nodemailer/*',
  'unpdf',
  'mammoth',
  'read-excel-file',
  'read-excel-file/*',
  '@opentelemetry/*',
  'prom-client',
];

/** Bundles into `outdir` (dist/ by default; a test bundles into a folder of its own). */
export async function bundle(outdir = path.join(root, 'dist')) {
  fs.rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: {
      server: 'src/server.ts',
      'cli-main': 'src/cli-main.ts',
      // text-extraction.ts starts its thread pool on `./extraction-worker.js` beside itself: every
      // chunk is in dist/ itself, so the worker must be there too.
      'extraction-worker': 'src/modules/knowledge/extraction-worker.ts',
    },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    // Stack traces need the mappings, not the sources: without their text the maps are a fraction of the
    // size, and `--enable-source-maps` parses every loaded file's map at start.
    sourcesContent: false,
    // Source paths in stack traces relative to the repository, as in the source.
    sourceRoot: '',
    chunkNames: 'chunk-[hash]',
    external: EXTERNAL,
    // CommonJS dependencies inside the bundle call `require` (for Node's own modules, and the
    // externals above): an ES module has none, so each file gets one.
    banner: {
      js: "import { createRequire as __remitRequire } from 'node:module'; const require = __remitRequire(import.meta.url);",
    },
    logLevel: 'warning',
    metafile: true,
  });
  await writePgliteTemplate(outdir);
  fs.writeFileSync(path.join(outdir, '.build-stamp'), new Date().toISOString());
  return result;
}

/** As `migrationsFingerprint` in src/platform/db/pglite-template.ts: every migration's tag and file. */
function migrationsFingerprint() {
  const dir = path.join(root, 'migrations');
  const journal = JSON.parse(fs.readFileSync(path.join(dir, 'meta/_journal.json'), 'utf8'));
  const hash = crypto.createHash('sha256');
  for (const { tag } of [...journal.entries].sort((a, b) => a.idx - b.idx)) {
    hash
      .update(`${tag}\0`)
      .update(fs.readFileSync(path.join(dir, `${tag}.sql`)))
      .update('\0');
  }
  return hash.digest('hex');
}

/**
 * The migrated, empty embedded database a fresh DATA_DIR starts from (src/platform/db/pglite-template.ts):
 * made by the bundle's own `remit migrate` on a throwaway DATA_DIR, whose database files are kept.
 */
async function writePgliteTemplate(outdir) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'remit-template-'));
  try {
    const env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'info', PORT: '0', RUN_WORKERS: 'false' };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'SECRET_KEY', 'SECRET_KEY_PREVIOUS', 'METRICS_PORT']) {
      delete env[name];
    }
    await firstStart(path.join(outdir, 'server.js'), env);
    // The files themselves (src/platform/db/pglite-template.ts copies them into a fresh DATA_DIR).
    fs.cpSync(path.join(dataDir, 'pglite'), path.join(outdir, 'pglite-template'), { recursive: true });
    fs.writeFileSync(
      path.join(outdir, 'pglite-template.json'),
      `${JSON.stringify({ migrations: migrationsFingerprint() })}\n`,
    );
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Runs the bundled server's first start on the throwaway DATA_DIR — migrations, pg-boss's schema, the
 * queues and schedules, exactly what a real first start writes — and stops it once it serves.
 */
function firstStart(server, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [server], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    const read = (chunk) => {
      output += chunk;
      if (output.includes('"msg":"Remit is serving"')) child.kill('SIGTERM');
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0 && output.includes('"msg":"Remit is serving"')) resolve();
      else reject(new Error(`the first start for the PGlite template failed (exit ${code}):\n${output}`));
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  await bundle();
  process.stdout.write(`dist/ bundled in ${Date.now() - started} ms\n`);
}
