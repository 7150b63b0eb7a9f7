// Writes the OpenAPI document (what GET /api/openapi.json serves) to a file without starting a server or
// needing a database server: the app is built over an in-memory PGlite, made ready, asked for its
// document, and closed. `npm run openapi` (default file: openapi.json, git-ignored); `npm run lint`
// lints that file with Redocly (redocly.yaml, docs/openapi.md).
//
//   tsx scripts/openapi.ts [file]      (`-` writes to stdout)
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createClients } from '../src/platform/clients.ts';
import { openDatabase } from '../src/platform/db/client.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { MemoryRateLimiter } from '../src/platform/http/rate-limit.ts';
import { Jobs } from '../src/platform/jobs/jobs.ts';
import { SecretBox, parseSecretKey } from '../src/platform/secrets/secret-box.ts';
import { createObjectStorage } from '../src/platform/storage/create-storage.ts';

const target = process.argv[2] ?? 'openapi.json';

// The document as a default embedded server serves it, whatever else this shell's environment holds (S3
// settings would drop the embedded store's routes): only its `servers` entry, the origin of
// PUBLIC_BASE_URL, follows the environment (default http://127.0.0.1:3000).
const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'remit-openapi-'));
const publicBaseUrl = process.env.PUBLIC_BASE_URL;
const config = loadConfig({
  DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  ...(publicBaseUrl ? { PUBLIC_BASE_URL: publicBaseUrl } : {}),
});
const database = await openDatabase({ statementTimeoutMs: 60_000 });
try {
  await migrate(database);
  const jobs = await Jobs.start(database, { supervise: false });
  const rateLimiter = new MemoryRateLimiter(config.rateLimitMax, config.rateLimitWindowS * 1000);
  const objectStorage = await createObjectStorage(config);
  // A throwaway key: nothing is sealed or opened while the document is made.
  const secrets = new SecretBox([parseSecretKey(crypto.randomBytes(32).toString('base64'), 'throwaway key')]);
  const app = await buildApp(
    { config, database, jobs, rateLimiter, objectStorage, secrets, clients: createClients(config) },
    { logger: false },
  );
  try {
    await app.ready();
    const text = `${JSON.stringify(app.swagger(), null, 2)}\n`;
    if (target === '-') process.stdout.write(text);
    else await fs.writeFile(target, text);
  } finally {
    await app.close();
    await jobs.stop(0);
    await rateLimiter.close();
    await objectStorage.close();
  }
} finally {
  await database.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}
