// `npm start`'s first step: bundles src/ into dist/ (scripts/build.mjs) when dist/ is missing or older
// than any source file, so a fresh clone, a `git pull` or an edit never starts yesterday's build. A
// no-op check costs milliseconds.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const stamp = path.join(root, 'dist/.build-stamp');

function newest(dir) {
  let latest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : fs.statSync(full).mtimeMs);
  }
  return latest;
}

const built = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
const sources = Math.max(
  newest(path.join(root, 'src')),
  // The build's embedded-database template is made from the migrations.
  newest(path.join(root, 'migrations')),
  ...['package.json', 'scripts/build.mjs'].map((f) => fs.statSync(path.join(root, f)).mtimeMs),
);
if (built < sources) {
  const result = spawnSync(process.execPath, [path.join(root, 'scripts/build.mjs')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
