import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/platform/http/errors.ts';

/** docs/errors.md is the list callers read: every code the service can answer must be in it, with its status. */
describe('docs/errors.md', () => {
  const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/errors.md'), 'utf8');
  const rows = new Map(
    [...doc.matchAll(/^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})\s*\|([^|]+)\|([^|]+)\|/gm)].map((m) => [
      m[1]!,
      { status: Number(m[2]), when: m[3]!.trim(), example: m[4]!.trim() },
    ]),
  );

  it.each(Object.entries(ERROR_CODES))(
    'lists %s with status %i, when it happens and an example',
    (code, status) => {
      const row = rows.get(code);
      expect(row, `${code} is missing from docs/errors.md`).toBeDefined();
      expect(row!.status).toBe(status);
      expect(row!.when.length).toBeGreaterThan(20);
      expect(row!.example).toMatch(/^`.+`$/);
    },
  );

  it('lists no code the service does not have', () => {
    for (const code of rows.keys()) expect(Object.keys(ERROR_CODES)).toContain(code);
  });
});
