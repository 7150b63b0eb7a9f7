#!/usr/bin/env node
// The `remit` command: the compiled CLI (dist/, built by `npm install` or `npm run build`), or the
// TypeScript source through tsx when there is no build yet (a checkout before its first build).
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const compiled = fileURLToPath(new URL('../dist/cli-main.js', import.meta.url));
if (fs.existsSync(compiled)) {
  process.setSourceMapsEnabled(true);
  await import(compiled);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli-main.ts');
}
