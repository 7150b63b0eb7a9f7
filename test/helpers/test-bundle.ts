import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './processes.ts';

interface BuildScript {
  BUILD_INPUTS_FILE: string;
  buildInputsFingerprint(): string;
  bundle(outdir: string): Promise<unknown>;
}

/**
 * Test runs' own bundles, each a folder directly in the repository as dist/ is: the bundle finds the
 * console at `../web/dist` (src/app.ts) and its external packages in `../node_modules`.
 */
const BUNDLE_PREFIX = '.test-bundle-';
const DAY_MS = 86_400_000;

function builtFrom(dir: string, file: string): string | undefined {
  try {
    return fs.readFileSync(path.join(dir, file), 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * The bundle (scripts/build.mjs) that the run's server, worker and CLI processes run, made from the
 * sources as they are now: dist/ when it was built from exactly these inputs (so a fresh clone, whose
 * `npm install` just built it, bundles nothing more), otherwise a folder of the run's own
 * (`.test-bundle-<hash>`, git-ignored), kept under the inputs' fingerprint for the next run with the
 * same sources.
 *
 * Processes ran the source through tsx before: 2.2 s of CPU for a start on a migrated PostgreSQL
 * database against 0.8 s for the bundle, and the suite starts about fifty of them
 * (docs/testing.md#timings). Running the bundle also tests what `npm start` runs.
 */
export async function prepareTestBundle(): Promise<string> {
  const build = (await import(path.join(ROOT, 'scripts/build.mjs'))) as BuildScript;
  const inputs = build.buildInputsFingerprint();
  const dist = path.join(ROOT, 'dist');
  if (builtFrom(dist, build.BUILD_INPUTS_FILE) === inputs) return dist;

  const dir = path.join(ROOT, `${BUNDLE_PREFIX}${inputs.slice(0, 16)}`);
  removeOldBundles(dir, build.BUILD_INPUTS_FILE);
  if (builtFrom(dir, build.BUILD_INPUTS_FILE) === inputs) {
    const now = new Date();
    fs.utimesSync(path.join(dir, build.BUILD_INPUTS_FILE), now, now);
    return dir;
  }
  // Built under another name and renamed: a run beside this one never starts half a bundle.
  const partial = `${dir}.partial-${process.pid}`;
  await build.bundle(partial);
  try {
    fs.renameSync(partial, dir);
  } catch {
    if (builtFrom(dir, build.BUILD_INPUTS_FILE) === inputs) {
      // Another run renamed its own meanwhile: the same inputs, the same bundle.
      fs.rmSync(partial, { recursive: true, force: true });
    } else {
      // What was there is half a bundle (a build killed before it wrote its inputs).
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(partial, dir);
    }
  }
  return dir;
}

/** Bundles of other sources that no run has used for a day (every run touches the one it uses). */
function removeOldBundles(keep: string, inputsFile: string): void {
  for (const name of fs.readdirSync(ROOT)) {
    const dir = path.join(ROOT, name);
    if (!name.startsWith(BUNDLE_PREFIX) || dir === keep) continue;
    try {
      const used = fs.statSync(path.join(dir, inputsFile), { throwIfNoEntry: false }) ?? fs.statSync(dir);
      if (used.mtimeMs < Date.now() - DAY_MS) fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // Removed meanwhile by another run.
    }
  }
}
