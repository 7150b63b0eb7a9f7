// Regenerates packages/client/src/schema.ts, the types of @remit/client, from the OpenAPI document
// (docs/client.md). `npm run client:generate`; packages/client/test/schema.test.ts fails when the
// committed file is stale.
//
//   tsx scripts/client-schema.ts                 builds the document with scripts/openapi.ts first
//   tsx scripts/client-schema.ts openapi.json    from a document already written
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { schemaSource } from '../packages/client/scripts/schema-source.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const target = path.join(root, 'packages/client/src/schema.ts');

let documentPath = process.argv[2];
let tempDir: string | undefined;
if (!documentPath) {
  tempDir = await fs.mkdtemp(path.join(os.tmpdir(), 'remit-client-schema-'));
  documentPath = path.join(tempDir, 'openapi.json');
  const made = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'scripts/openapi.ts'), documentPath],
    { stdio: 'inherit', env: { ...process.env, PUBLIC_BASE_URL: '' } },
  );
  if (made.status !== 0) process.exit(made.status ?? 1);
}
try {
  const document = JSON.parse(await fs.readFile(documentPath, 'utf8')) as object;
  await fs.writeFile(target, await schemaSource(document));
  console.log(`wrote ${path.relative(process.cwd(), target)}`);
} finally {
  if (tempDir) await fs.rm(tempDir, { recursive: true, force: true });
}
