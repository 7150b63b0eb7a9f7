import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { SigV4Credentials } from './sigv4.ts';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function randomKeyId(): string {
  // AWS-shaped: 20 upper-case characters; `RMT` marks keys made by the embedded store.
  const bytes = crypto.randomBytes(17);
  return 'RMT' + Array.from(bytes, (b) => BASE32[b % 32]).join('');
}

function isCredentials(value: unknown): value is { access_key_id: string; secret_access_key: string } {
  const v = value as Record<string, unknown> | null;
  return (
    typeof v?.access_key_id === 'string' &&
    /^[A-Z0-9]{16,128}$/.test(v.access_key_id) &&
    typeof v.secret_access_key === 'string' &&
    v.secret_access_key.length >= 32
  );
}

/**
 * The embedded store's signing credentials, made once and kept in `<dir>/.credentials` (mode 0600), so
 * presigned URLs stay valid across restarts. Whoever can read this file can sign URLs for every object:
 * it is as secret as the database. Two processes starting at once agree on one file (exclusive create).
 */
export async function loadOrCreateCredentials(dir: string): Promise<SigV4Credentials> {
  const file = path.join(dir, '.credentials');
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const parsed: unknown = JSON.parse(await fs.readFile(file, 'utf8'));
      if (!isCredentials(parsed)) throw new Error(`${file} is not a valid credentials file`);
      return { accessKeyId: parsed.access_key_id, secretAccessKey: parsed.secret_access_key };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const created = {
      access_key_id: randomKeyId(),
      secret_access_key: crypto.randomBytes(30).toString('base64url'),
    };
    try {
      // Written under a temporary name and linked into place: readers never see a half-written file,
      // and of two concurrent creators exactly one wins.
      const tmp = `${file}.${process.pid}.${crypto.randomUUID()}`;
      await fs.writeFile(tmp, JSON.stringify(created, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
      try {
        await fs.link(tmp, file);
      } finally {
        await fs.rm(tmp, { force: true });
      }
      return { accessKeyId: created.access_key_id, secretAccessKey: created.secret_access_key };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // Another process created it first: read theirs.
    }
  }
  throw new Error(`Could not read or create ${file}`);
}
