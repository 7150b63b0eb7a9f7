import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MIGRATIONS_DIR } from './migrate.ts';

/**
 * A migrated, empty embedded database that the build writes beside the bundle (`npm run build`,
 * scripts/build.mjs): a fresh DATA_DIR starts as a copy of it, and then starts like a restart, instead
 * of running PostgreSQL's initdb in a second WebAssembly instance and every migration (6 s and 420 MiB
 * before; docs/performance.md). A copy of the files, not a PGlite dump: loading a dump unpacks it in the
 * WebAssembly heap, which never shrinks (≈ 440 MiB idle). It holds no organization, user or key — only
 * the schema — and is used only when it was made from exactly the migrations on disk; anything else
 * starts the long way.
 */
export const TEMPLATE_DIR = 'pglite-template';
export const TEMPLATE_FINGERPRINT_FILE = 'pglite-template.json';

/**
 * Every migration's tag and file, in journal order: what the template must have been made from.
 * scripts/build.mjs writes the template's with this same function (the bundle's `pglite-template.js`).
 */
export function migrationsFingerprint(dir = MIGRATIONS_DIR): string {
  const journal = JSON.parse(fs.readFileSync(path.join(dir, 'meta/_journal.json'), 'utf8')) as {
    entries: { idx: number; tag: string }[];
  };
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
 * Copies the template beside `codeUrl` (the bundle's own folder) into the fresh `dataDir`, when there is
 * one made from these migrations; true when it did.
 */
export function copyPgliteTemplate(codeUrl: string, dataDir: string): boolean {
  const dir = path.dirname(fileURLToPath(codeUrl));
  try {
    const meta = JSON.parse(fs.readFileSync(path.join(dir, TEMPLATE_FINGERPRINT_FILE), 'utf8')) as {
      migrations?: string;
    };
    if (meta.migrations !== migrationsFingerprint()) return false;
  } catch {
    return false;
  }
  // Copied under another name and renamed: a start killed halfway leaves no half database behind.
  const partial = `${dataDir}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.cpSync(path.join(dir, TEMPLATE_DIR), partial, { recursive: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.renameSync(partial, dataDir);
  return true;
}

/** Whether PGlite has never initialized `dataDir` (absent or empty). */
export function isFreshPgliteDir(dataDir: string): boolean {
  return !fs.existsSync(path.join(dataDir, 'PG_VERSION'));
}
