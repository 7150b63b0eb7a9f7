// Builds the console (web/, docs/console.md) into web/dist with Vite, then writes a brotli and a gzip copy
// beside each asset, which Remit sends to browsers that accept them (src/platform/http/console.ts): the
// files are compressed once here instead of on every request. Prints what the first load of the console
// costs: the JavaScript index.html loads (its entry script and the chunks it preloads), compressed.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const web = path.join(root, 'web');
const dist = path.join(web, 'dist');
const COMPRESSIBLE = /\.(js|css|html|svg|json|txt)$/;

export async function buildConsole() {
  const { build } = await import('vite');
  // The runner loader evaluates vite.config.ts in memory; the default one writes a temporary file
  // into the nearest node_modules.
  await build({
    root: web,
    configFile: path.join(web, 'vite.config.ts'),
    configLoader: 'runner',
    logLevel: 'warn',
  });
  for (const file of walk(dist)) {
    if (!COMPRESSIBLE.test(file)) continue;
    const content = fs.readFileSync(file);
    fs.writeFileSync(`${file}.gz`, zlib.gzipSync(content, { level: 9 }));
    fs.writeFileSync(
      `${file}.br`,
      zlib.brotliCompressSync(content, {
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
          [zlib.constants.BROTLI_PARAM_SIZE_HINT]: content.length,
        },
      }),
    );
  }
  return firstLoad();
}

function* walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(full);
    else yield full;
  }
}

/** The scripts index.html loads at once (`<script src>` and `<link rel=modulepreload>`), with sizes. */
export function firstLoad() {
  const html = fs.readFileSync(path.join(dist, 'index.html'), 'utf8');
  const urls = [
    ...html.matchAll(/<script[^>]+src="([^"]+)"/g),
    ...html.matchAll(/<link[^>]+rel="modulepreload"[^>]+href="([^"]+)"/g),
  ].map((m) => m[1]);
  const files = [...new Set(urls)].map((url) => path.join(dist, url.replace(/^\/app\//, '')));
  const size = (suffix) => files.reduce((sum, file) => sum + fs.statSync(file + suffix).size, 0);
  return {
    files: files.map((f) => path.relative(web, f)),
    raw: size(''),
    gzip: size('.gz'),
    brotli: size('.br'),
  };
}

export function describeFirstLoad(js) {
  const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
  return `first-load JavaScript ${kb(js.raw)}, ${kb(js.gzip)} gzip, ${kb(js.brotli)} brotli (${js.files.join(', ')})`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const js = await buildConsole();
  process.stdout.write(`web/dist built in ${Date.now() - started} ms; ${describeFirstLoad(js)}\n`);
}
