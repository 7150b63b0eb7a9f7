import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../config.ts';
import {
  generateSecretKey,
  parseSecretKey,
  SecretBox,
  SecretKeyError,
  type SecretKey,
} from './secret-box.ts';

/** The embedded key file: one base64 key per line, the first one current. Mode 0600. */
export const KEY_FILE = 'secret.key';

export interface LoadedKeyring {
  box: SecretBox;
  /** Set when this call created the key file (say so once, in the log). */
  generatedFile?: string;
}

/** The key lines of the file's text: blank lines and `#` comments skipped. */
function keyLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));
}

async function readKeyFile(file: string): Promise<SecretKey[] | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const lines = keyLines(text);
  if (lines.length === 0) throw new SecretKeyError(`${file} holds no key`);
  return lines.map((line, i) => parseSecretKey(line, `${file}, line ${i + 1}`));
}

/** Writes the key file atomically with mode 0600 (a temporary file renamed over it). */
async function writeKeyFile(file: string, keys: string[]): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, `${keys.join('\n')}\n`, { mode: 0o600 });
  await fs.rename(tmp, file);
}

/**
 * The keys that seal and open stored credentials (docs/security.md#secrets-at-rest):
 * `SECRET_KEY` (current) and `SECRET_KEY_PREVIOUS`; without `SECRET_KEY`, on the embedded database only,
 * `DATA_DIR/secret.key`, created on first start. With `DATABASE_URL` a key must be configured: a key
 * generated on one machine's disk would leave every other instance unable to read the credentials.
 */
export async function loadKeyring(config: Config): Promise<LoadedKeyring> {
  const previous = config.secretKeysPrevious.map((k, i) =>
    parseSecretKey(k, `SECRET_KEY_PREVIOUS (key ${i + 1})`),
  );
  if (config.secretKey) {
    const fileKeys = config.databaseUrl
      ? []
      : ((await readKeyFile(path.join(config.dataDir, KEY_FILE))) ?? []);
    return {
      box: new SecretBox(dedupe([parseSecretKey(config.secretKey, 'SECRET_KEY'), ...previous, ...fileKeys])),
    };
  }
  if (config.databaseUrl) {
    throw new SecretKeyError(
      'SECRET_KEY is required with DATABASE_URL: it encrypts the stored credentials (billing secrets, SMTP ' +
        'passwords), and every instance needs the same one. Make one with `remit secrets generate-key` ' +
        '(or `openssl rand -base64 32`), keep it in your secret store, and set SECRET_KEY.',
    );
  }
  const file = path.join(config.dataDir, KEY_FILE);
  const existing = await readKeyFile(file);
  if (existing) return { box: new SecretBox(dedupe([...existing, ...previous])) };
  await fs.mkdir(config.dataDir, { recursive: true });
  const key = generateSecretKey();
  try {
    // `wx`: of two processes creating it at once, one writes and the other reads what it wrote.
    await fs.writeFile(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { box: new SecretBox(dedupe([...(await readKeyFile(file))!, ...previous])) };
  }
  return { box: new SecretBox(dedupe([parseSecretKey(key, file), ...previous])), generatedFile: file };
}

/**
 * `remit secrets rotate` on the embedded database without SECRET_KEY: a new key becomes the first line
 * of the key file; the earlier ones stay below it, so what they sealed still opens.
 */
export async function addEmbeddedKey(config: Config): Promise<SecretBox> {
  const file = path.join(config.dataDir, KEY_FILE);
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  await writeKeyFile(file, [generateSecretKey(), ...keyLines(text)]);
  return (await loadKeyring(config)).box;
}

function dedupe(keys: SecretKey[]): SecretKey[] {
  const seen = new Set<string>();
  return keys.filter((k) => (seen.has(k.id) ? false : (seen.add(k.id), true)));
}
