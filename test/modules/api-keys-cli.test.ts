import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runServedCommand } from '../../src/cli.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import type { RunResult } from '../helpers/processes.ts';

/* eslint-disable @typescript-eslint/no-explicit-any -- CLI output is checked field by field */
function json(res: RunResult): Record<string, any> {
  const lines = res.stdout.trim().split('\n');
  expect(lines, res.stderr).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, any>;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/**
 * `remit keys create | list | revoke` (src/cli.ts), run as the server runs them for a CLI beside it
 * (`runServedCommand` over the app's open database: the same command code as a `remit` process, without
 * opening a database per command), so the keys can be tried against the same app. The CLI as a process,
 * directly and through the admin socket: test/platform/cli-beside-server.test.ts.
 */
describe('remit keys', () => {
  let t: TestApp;
  let acme: string;
  let other: string;
  const runCli = async (argv: string[]): Promise<RunResult> => {
    let stdout = '';
    let stderr = '';
    const { exitCode } = await runServedCommand(
      argv,
      { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } },
      { config: t.config, database: t.database },
    );
    return { code: exitCode, stdout, stderr };
  };

  beforeAll(async () => {
    t = await createTestApp();
    acme = json(await runCli(['init', '--org', 'Acme', '--email', 'ada@acme.test', '--json']))
      .organization_uid as string;
    other = json(await runCli(['init', '--org', 'Other', '--email', 'x@other.test', '--json']))
      .organization_uid as string;
    // Ada: admin of Acme (her default) and member of Other.
    expect(
      (await runCli(['users', 'create', '--org', other, '--email', 'ada@acme.test', '--json'])).code,
    ).toBe(0);
  });
  afterAll(async () => {
    await t.close();
  });

  it('creates a full-access key in the default organization, or in the one named', async () => {
    const res = await runCli(['keys', 'create', '--email', ' Ada@Acme.test ', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const key = json(res);
    expect(Object.keys(key).sort()).toEqual([
      'api_key',
      'expires_at',
      'name',
      'organization_uid',
      'scopes',
      'uid',
      'user_uid',
    ]);
    expect(key).toMatchObject({ name: 'CLI key', organization_uid: acme, scopes: [], expires_at: null });
    expect(key.api_key).toMatch(/^rk_live_[0-9A-Za-z]{38}$/);

    const inOther = json(
      await runCli([
        'keys',
        'create',
        '--email',
        'ada@acme.test',
        '--org',
        other,
        '--expires-in-days',
        '30',
        '--json',
      ]),
    );
    expect(inOther.organization_uid).toBe(other);
    const days = (Date.parse(inOther.expires_at as string) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);

    const human = await runCli(['keys', 'create', '--email', 'ada@acme.test', '--name', 'Laptop']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^API key {6}rk_live_\S+\nKey uid {6}\S+ \("Laptop", full access\)\n/);
    expect(human.stdout).toContain('Keep the key: it is shown only once.');
  });

  it('takes scopes as a comma-separated list', async () => {
    const key = json(
      await runCli([
        'keys',
        'create',
        '--email',
        'ada@acme.test',
        '--scopes',
        'invoices:read, metrics:read,invoices:read',
        '--json',
      ]),
    );
    expect(key.scopes).toEqual(['invoices:read', 'metrics:read']);
    // The app honours them: reads allowed, writes not.
    expect((await call(t.app, 'GET', '/api/parties', { key: key.api_key })).status).toBe(200);
    const write = await call(t.app, 'POST', '/api/parties', {
      key: key.api_key,
      body: { name: 'Not allowed', role: 'client' },
    });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('missing_scope');
  });

  it('refuses what it cannot issue: no such user, not a member, unknown scope, bad options', async () => {
    const cases: [string[], number, string, string][] = [
      [['--email', 'nobody@acme.test'], 1, 'not_found', 'No user has the email nobody@acme.test'],
      [
        ['--email', 'x@other.test', '--org', acme],
        1,
        'not_found',
        `x@other.test is not a member of organization ${acme}`,
      ],
      [
        ['--email', 'ada@acme.test', '--scopes', 'invoices:read,bogus'],
        1,
        'validation_failed',
        'Unknown scope: bogus',
      ],
      [['--email', 'not-an-email'], 1, 'validation_failed', '"not-an-email" is not an email address'],
      [
        ['--email', 'ada@acme.test', '--org', 'acme'],
        2,
        'usage',
        '--org must be an organization uid (a UUID)',
      ],
      [
        ['--email', 'ada@acme.test', '--scopes', ' , '],
        2,
        'usage',
        '--scopes must name at least one scope (leave it out for full access)',
      ],
      [
        ['--email', 'ada@acme.test', '--expires-in-days', '0'],
        2,
        'usage',
        '--expires-in-days must be between 1 and 36500',
      ],
    ];
    for (const [args, code, errorCode, message] of cases) {
      const res = await runCli(['keys', 'create', ...args, '--json']);
      expect(res.code, args.join(' ')).toBe(code);
      expect(json(res)).toEqual({ error: { code: errorCode, message } });
    }
    // An admin-only scope is fine for an admin, not for a member.
    expect(
      (await runCli(['keys', 'create', '--email', 'ada@acme.test', '--scopes', 'agents:token_usage'])).code,
    ).toBe(0);
    expect(
      json(
        await runCli([
          'keys',
          'create',
          '--email',
          'ada@acme.test',
          '--org',
          other,
          '--scopes',
          'agents:token_usage',
          '--json',
        ]),
      ),
    ).toEqual({
      error: { code: 'validation_failed', message: "A member's key cannot hold: agents:token_usage" },
    });
  });

  it('lists a member’s keys without the keys themselves, and revokes one once', async () => {
    const made = json(
      await runCli(['keys', 'create', '--email', 'x@other.test', '--name', 'To revoke', '--json']),
    );
    const listed = json(await runCli(['keys', 'list', '--email', 'x@other.test', '--json']));
    expect(listed.keys).toHaveLength(2); // the initial admin key and this one
    const entry = (listed.keys as Record<string, unknown>[]).find((k) => k.uid === made.uid)!;
    expect(entry).toEqual({
      uid: made.uid,
      name: 'To revoke',
      key_snippet: `rk_live_...${(made.api_key as string).slice(-4)}`,
      organization_uid: other,
      scopes: [],
      status: 'active',
      last_used_at: null,
      expires_at: null,
      revoked_at: null,
      created_at: expect.any(String),
    });
    expect(JSON.stringify(listed)).not.toContain(made.api_key);

    expect((await call(t.app, 'GET', '/api/me', { key: made.api_key })).status).toBe(200);
    const revoked = json(await runCli(['keys', 'revoke', made.uid as string, '--json']));
    expect((await call(t.app, 'GET', '/api/me', { key: made.api_key })).status).toBe(401);
    expect(revoked).toMatchObject({ uid: made.uid, organization_uid: other, revoked_at: expect.any(String) });
    const again = json(await runCli(['keys', 'revoke', made.uid as string, '--json']));
    expect(again.revoked_at).toBe(revoked.revoked_at);
    const after = json(await runCli(['keys', 'list', '--email', 'x@other.test', '--org', other, '--json']));
    expect((after.keys as Record<string, unknown>[]).find((k) => k.uid === made.uid)).toMatchObject({
      status: 'revoked',
    });

    expect(json(await runCli(['keys', 'revoke', '00000000-0000-4000-8000-000000000000', '--json']))).toEqual({
      error: { code: 'not_found', message: 'API key not found' },
    });
    expect((await runCli(['keys', 'revoke', 'abc', '--json'])).code).toBe(2);
    expect((await runCli(['keys', 'revoke', '--json'])).code).toBe(2);
  });

  it('lists the keys of every organization of the user, or one', async () => {
    const all = json(await runCli(['keys', 'list', '--email', 'ada@acme.test', '--json']));
    const orgs = new Set((all.keys as { organization_uid: string }[]).map((k) => k.organization_uid));
    expect(orgs).toEqual(new Set([acme, other]));
    const one = json(await runCli(['keys', 'list', '--email', 'ada@acme.test', '--org', other, '--json']));
    expect((one.keys as { organization_uid: string }[]).every((k) => k.organization_uid === other)).toBe(
      true,
    );
  });
});
