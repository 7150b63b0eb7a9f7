// `npm run build`: bundles the server, the CLI and the extraction thread into dist/ with esbuild, one
// file per entry point plus shared chunks, then builds the console into web/dist (build-console.mjs). A bundle starts faster than tsc's one file per module: Node 20
// has no compile cache, and resolving and reading Fastify's, Ajv's and our ≈ 150 files was a third of a
// start (docs/performance.md#start-and-footprint). Type checking is `npm run typecheck`, not the build.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { buildConsole, describeFirstLoad } from './build-console.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * Loaded from node_modules at run time, not bundled:
 * - `pg`: OpenTelemetry's instrumentation patches it as it is loaded (tracing-preload.ts);
 * - packages that read files of their own beside their code (PGlite's WebAssembly, Swagger UI's pages,
 *   piscina's and pino's worker files, pdfkit's font metrics) or are native (argon2);
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
  'pdfkit',
  'mammoth',
  'read-excel-file',
  'read-excel-file/*',
  '@opentelemetry/*',
  'prom-client',
];

/** What a bundle is made from: its sources, the migrations its template holds, and how it is built. */
const BUILD_INPUTS = [
  'src',
  'migrations',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'scripts/build.mjs',
];
/** The file in a bundle's folder that holds the fingerprint of the inputs it was made from. */
export const BUILD_INPUTS_FILE = '.build-inputs';

/**
 * A hash of every build input's path and bytes: the test run uses dist/ only when dist/ was built from
 * exactly these (test/helpers/test-bundle.ts), and bundles a folder of its own otherwise.
 */
export function buildInputsFingerprint() {
  const hash = crypto.createHash('sha256');
  const add = (file) => {
    const full = path.join(root, file);
    if (fs.statSync(full).isDirectory()) {
      for (const name of fs.readdirSync(full).sort()) add(path.join(file, name));
    } else hash.update(`${file}\0`).update(fs.readFileSync(full)).update('\0');
  };
  for (const input of BUILD_INPUTS) add(input);
  return hash.digest('hex');
}

/** Bundles into `outdir` (dist/ by default; a test run bundles into a folder of its own). */
export async function bundle(outdir = path.join(root, 'dist')) {
  // Taken before the build reads anything: a source edited meanwhile makes this bundle stale.
  const inputs = buildInputsFingerprint();
  fs.rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: {
      server: 'src/server.ts',
      'cli-main': 'src/cli-main.ts',
      // text-extraction.ts starts its thread pool on `./extraction-worker.js` beside itself: every
      // chunk is in dist/ itself, so the worker must be there too.
      'extraction-worker': 'src/modules/knowledge/extraction-worker.ts',
      // The same for invoice-pdf-rendering.ts's thread pool.
      'invoice-pdf-worker': 'src/modules/invoices/invoice-pdf-worker.ts',
      // For this script: the migrations' fingerprint the template is written with (the same code that
      // checks it at run time).
      'pglite-template': 'src/platform/db/pglite-template.ts',
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
    // V8 reads every byte of a module before it runs any of it: without blanks and comments the bundle
    // is half its size and a start ≈ 60 ms shorter. Names stay (stack traces, Fastify's plugin names);
    // the source maps point back into src/.
    minifyWhitespace: true,
    minifySyntax: true,
  });
  await writePgliteTemplate(outdir);
  fs.writeFileSync(path.join(outdir, '.build-stamp'), new Date().toISOString());
  fs.writeFileSync(path.join(outdir, BUILD_INPUTS_FILE), `${inputs}\n`);
  return result;
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
      `${JSON.stringify({ migrations: await fingerprintOf(outdir) })}\n`,
    );
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The fingerprint as the bundle computes it (src/platform/db/pglite-template.ts). */
async function fingerprintOf(outdir) {
  const { migrationsFingerprint } = await import(pathToFileURL(path.join(outdir, 'pglite-template.js')).href);
  return migrationsFingerprint();
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
  const consoleStarted = Date.now();
  const firstLoad = await buildConsole();
  process.stdout.write(
    `web/dist built in ${Date.now() - consoleStarted} ms; ${describeFirstLoad(firstLoad)}\n`,
  );
}
