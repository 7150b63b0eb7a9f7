// `npm start`'s first step (scripts/start.mjs): bundles src/ into dist/ (scripts/build.mjs) when dist/ is missing or older
// than any source file, and builds the console into web/dist (scripts/build-console.mjs) when it is
// missing or older than its sources, so a fresh clone, a `git pull` or an edit never starts yesterday's
// build. A no-op check costs milliseconds.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function newest(dir) {
  let latest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : fs.statSync(full).mtimeMs);
  }
  return latest;
}
const modified = (file) => fs.statSync(path.join(root, file)).mtimeMs;
const builtAt = (file) => (fs.existsSync(path.join(root, file)) ? modified(file) : 0);

function run(script) {
  const result = spawnSync(process.execPath, [path.join(root, script)], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/** Builds what is stale (see above); returns once dist/ and web/dist are current. */
export function buildIfStale() {
  const serverSources = Math.max(
    newest(path.join(root, 'src')),
    // The build's embedded-database template is made from the migrations.
    newest(path.join(root, 'migrations')),
    ...['package.json', 'scripts/build.mjs'].map(modified),
  );
  if (builtAt('dist/.build-stamp') < serverSources) run('scripts/build.mjs');
  else {
    const consoleSources = Math.max(
      newest(path.join(root, 'web/src')),
      newest(path.join(root, 'packages/client/src')),
      ...['web/index.html', 'web/vite.config.ts', 'web/package.json', 'scripts/build-console.mjs'].map(
        modified,
      ),
    );
    if (builtAt('web/dist/index.html') < consoleSources) run('scripts/build-console.mjs');
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildIfStale();
