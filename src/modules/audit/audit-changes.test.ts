import { describe, expect, it } from 'vitest';
import { changesBetween, hasChanges, isSecretField, REDACTED } from './audit-changes.ts';

describe('changesBetween', () => {
  it('lists only the fields that differ, in snake_case, with before and after', () => {
    expect(
      changesBetween(
        { name: 'Acme', taxId: 'A-1', updatedAt: new Date(1), revision: 1 },
        { name: 'Acme Ltd', taxId: 'A-1', updatedAt: new Date(2), revision: 2 },
        { omit: ['revision'] },
      ),
    ).toEqual({ name: { before: 'Acme', after: 'Acme Ltd' } });
  });

  it('a creation lists every field that has a value; a deletion every field it had', () => {
    expect(changesBetween(null, { uid: 'u', status: 'draft', dueDate: null, lines: [] })).toEqual({
      status: { before: null, after: 'draft' },
      lines: { before: null, after: [] },
    });
    expect(changesBetween({ url: 'https://x.test' }, null)).toEqual({
      url: { before: 'https://x.test', after: null },
    });
  });

  it('compares instants as ISO strings and objects by value', () => {
    const at = new Date('2030-01-31T00:00:00Z');
    expect(changesBetween({ dueDate: at }, { dueDate: new Date(at.getTime()) })).toEqual({});
    expect(changesBetween({ dueDate: at }, { dueDate: null })).toEqual({
      due_date: { before: '2030-01-31T00:00:00.000Z', after: null },
    });
    expect(changesBetween({ tools: [{ type: 'send_email' }] }, { tools: [{ type: 'send_email' }] })).toEqual(
      {},
    );
    expect(changesBetween({ config: { a: 1 } }, { config: { a: 2 } })).toEqual({
      config: { before: { a: 1 }, after: { a: 2 } },
    });
  });

  it('never writes a secret: it shows as "[redacted]" when set, null when not, at any depth', () => {
    expect(
      changesBetween(
        { secret: 'old-secret', smtpUrl: null, keyHash: 'abc' },
        { secret: 'new-secret', smtpUrl: 'smtp://u:pw@host', keyHash: 'def' },
      ),
    ).toEqual({
      secret: { before: REDACTED, after: REDACTED },
      smtp_url: { before: null, after: REDACTED },
      key_hash: { before: REDACTED, after: REDACTED },
    });
    // The same secret is no change, and says nothing.
    expect(changesBetween({ secret: 's' }, { secret: 's' })).toEqual({});
    expect(
      changesBetween(null, {
        toolArgs: { recipient: 'a@b.test', password: 'hunter2', nested: { apiKey: 'k' } },
      }),
    ).toEqual({
      tool_args: {
        before: null,
        after: { recipient: 'a@b.test', password: REDACTED, nested: { apiKey: REDACTED } },
      },
    });
  });

  it('knows which names are secrets', () => {
    for (const name of [
      'secret',
      'client_secret',
      'password',
      'smtp_url',
      'key_hash',
      'api_key',
      'token',
      'key',
    ])
      expect(isSecretField(name), name).toBe(true);
    for (const name of ['key_snippet', 'keyword', 'monkey', 'status', 'tokens_used', 'secretary'])
      expect(isSecretField(name), name).toBe(false);
  });

  it('hasChanges', () => {
    expect(hasChanges({})).toBe(false);
    expect(hasChanges({ a: { before: 1, after: 2 } })).toBe(true);
  });
});
