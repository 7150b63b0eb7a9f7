import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * @remit/client as a project outside this repository gets it: packed as the README says
 * (`npm pack --silent <checkout>/packages/client`, run in the project), installed from the tarball into
 * a fresh project, then imported, required and type-checked there.
 *
 * Offline: `npm install <tarball>` alone would ask the registry for the versions of the package's
 * dependencies, which the cache holds only after an install without a lockfile. So the project gets a
 * lockfile pinning them to the repository's own lockfile (whose `npm install` put their tarballs in the
 * cache) and `npm install --offline` reads it: the same files, without a network.
 */
const run = promisify(execFile);
const PACKAGE = path.resolve(import.meta.dirname, '..');
const ROOT = path.resolve(PACKAGE, '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

/** The environment without what an enclosing `npm test` set for its own package. */
function npmEnvironment(): NodeJS.ProcessEnv {
  const keep = new Set(['npm_config_cache', 'npm_config_userconfig', 'npm_config_registry']);
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') || keep.has(name)),
  );
}

async function npm(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, env: npmEnvironment(), maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

interface LockEntry {
  version: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
}

/**
 * The package.json and lockfile `npm install ./<tarball>` would write in `project`, the versions of the
 * package's dependencies taken from the repository's lockfile.
 */
async function installedFrom(project: string, tarball: string, registry: string) {
  const manifest = JSON.parse(await fs.readFile(path.join(PACKAGE, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    dependencies: Record<string, string>;
  };
  const rootLock = JSON.parse(await fs.readFile(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>;
  };
  const spec = `file:${tarball}`;
  const bytes = await fs.readFile(path.join(project, tarball));
  const packages: Record<string, object> = {};
  const add = (name: string) => {
    const key = `node_modules/${name}`;
    if (packages[key]) return;
    const entry = rootLock.packages[key];
    if (!entry) throw new Error(`${name} is not at the top of package-lock.json's node_modules`);
    packages[key] = {
      version: entry.version,
      resolved: entry.resolved ?? `${registry}${name}/-/${name.split('/').pop()}-${entry.version}.tgz`,
      integrity: entry.integrity,
      dependencies: entry.dependencies,
    };
    for (const dependency of Object.keys(entry.dependencies ?? {})) add(dependency);
  };
  for (const dependency of Object.keys(manifest.dependencies)) add(dependency);
  return {
    packageJson: { name: 'consumer', private: true, dependencies: { [manifest.name]: spec } },
    lock: {
      name: 'consumer',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 'consumer', dependencies: { [manifest.name]: spec } },
        [`node_modules/${manifest.name}`]: {
          version: manifest.version,
          resolved: spec,
          integrity: `sha512-${crypto.createHash('sha512').update(bytes).digest('base64')}`,
          dependencies: manifest.dependencies,
        },
        ...packages,
      },
    },
  };
}

/**
 * What the ES module and the CommonJS script both do with the package (`client` is its exports): a call
 * through a fake fetch, a typed error, a webhook signed here by the specification and verified there.
 */
const CHECKS = `
async function check(client) {
  const sent = [];
  const fetch = async (request) => {
    sent.push({ method: request.method, url: request.url, authorization: request.headers.get('authorization') });
    if (request.url.endsWith('/api/me')) {
      return Response.json({ status: 'success', status_code: 200, message: 'OK', data: { user: { email: 'ada@example.com' } } });
    }
    return Response.json({ status: 'error', status_code: 404, code: 'not_found', message: 'No such invoice' }, { status: 404 });
  };
  const remit = client.createRemitClient({ baseUrl: 'http://remit.test', apiKey: 'rk_live_test', fetch });
  const me = await remit.GET('/api/me');
  let error;
  try {
    await remit.GET('/api/invoices/{uid}', { params: { path: { uid: 'nope' } } });
  } catch (caught) {
    error = caught;
  }

  const key = Buffer.from('0123456789abcdef0123456789abcdef');
  const secret = 'whsec_' + key.toString('base64');
  const body = JSON.stringify({ type: 'webhook.test', timestamp: '2026-01-01T00:00:00.000Z', data: {} });
  const timestamp = '1767225600';
  const signature = crypto.createHmac('sha256', key).update('msg_1.' + timestamp + '.' + body).digest('base64');
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': timestamp, 'webhook-signature': 'v1,' + signature };
  const now = new Date(Number(timestamp) * 1000);
  const event = client.verifyWebhook(secret, Buffer.from(body), headers, { now });
  let refused;
  try {
    client.verifyWebhook(secret, body + ' ', headers, { now });
  } catch (caught) {
    refused = caught;
  }
  return {
    exports: Object.keys(client).sort(),
    email: me.data.user.email,
    sent,
    error: { isRemitApiError: error instanceof client.RemitApiError, status: error.status, code: error.code },
    eventType: event.type,
    refused: refused instanceof client.WebhookVerificationError,
  };
}
`;

const TYPE_CHECKS = `
import {
  createRemitClient,
  RemitApiError,
  verifyWebhook,
  type RemitClient,
  type RemitWebhookEvent,
  type SuccessBody,
} from '@remit/client';

const remit: RemitClient = createRemitClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: 'rk_live_x' });
export async function email(): Promise<string> {
  const me: SuccessBody<'get', '/api/me'> = await remit.GET('/api/me');
  return me.data.user.email;
}
export async function missingPath(): Promise<void> {
  // @ts-expect-error: not a path of the API
  await remit.GET('/api/no-such-path');
}
export const isRemitApiError = (error: unknown): error is RemitApiError => error instanceof RemitApiError;
export const verify: (secret: string, body: string, headers: Headers) => RemitWebhookEvent = verifyWebhook;
`;

// No database here: it runs once, in the embedded suite, not again in the PostgreSQL one.
describe.skipIf(process.env.TEST_DATABASE_URL)('@remit/client installed from its tarball', () => {
  let project: string;
  let installed: string;

  beforeAll(async () => {
    project = await fs.mkdtemp(path.join(os.tmpdir(), 'remit-client-consumer-'));
    await fs.writeFile(path.join(project, 'package.json'), '{}\n');
    // As the README says, run in the project: the tarball lands there and stdout is its name.
    const tarball = await npm(project, ['pack', '--silent', PACKAGE]);
    const { version } = JSON.parse(await fs.readFile(path.join(PACKAGE, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(tarball).toBe(`remit-client-${version}.tgz`);
    const registry = (await npm(project, ['config', 'get', 'registry'])).replace(/\/?$/, '/');
    const { packageJson, lock } = await installedFrom(project, tarball, registry);
    await fs.writeFile(path.join(project, 'package.json'), JSON.stringify(packageJson, null, 2));
    await fs.writeFile(path.join(project, 'package-lock.json'), JSON.stringify(lock, null, 2));
    await npm(project, ['install', '--offline', '--no-audit', '--no-fund']);
    installed = path.join(project, 'node_modules/@remit/client');
  }, 120_000);

  afterAll(async () => {
    if (project) await fs.rm(project, { recursive: true, force: true });
  });

  it('ships the ES modules, the CommonJS build and their types, and nothing else', async () => {
    const files = (await fs.readdir(installed, { recursive: true })).sort();
    for (const file of [
      'README.md',
      'package.json',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/cjs/index.js',
      'dist/cjs/index.d.ts',
      'dist/cjs/package.json',
    ]) {
      expect(files).toContain(file);
    }
    expect(files.filter((file) => /^(src|test|scripts|examples)\b/.test(file))).toEqual([]);
    // The declarations import each other as `.js`, which every consumer's TypeScript resolves.
    const index = await fs.readFile(path.join(installed, 'dist/cjs/index.d.ts'), 'utf8');
    expect(index).toContain(`from './client.js'`);
    expect(index).not.toMatch(/from '\.\/[^']+\.ts'/);
  });

  it("its README's links resolve inside the package", async () => {
    const readme = await fs.readFile(path.join(installed, 'README.md'), 'utf8');
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
    expect(targets.length).toBeGreaterThan(0);
    for (const target of targets) {
      if (/^https:\/\//.test(target)) continue;
      const file = target.split('#')[0]!;
      expect(file, `${target}: a relative link`).not.toBe('');
      await expect(fs.stat(path.join(installed, file)), `${target} is in the package`).resolves.toBeTruthy();
    }
  });

  const expected = {
    exports: [
      'ApprovalTimeoutError',
      'RemitApiError',
      'RunLostError',
      'WebhookVerificationError',
      'claimFollowUpRun',
      'claimNextRun',
      'claimRun',
      'claimedRun',
      'createRemitClient',
      'findFollowUpRun',
      'requireApproval',
      'runOutsideAgent',
      'signIn',
      'verifyWebhook',
      'waitForDecision',
      'workOnRun',
    ],
    email: 'ada@example.com',
    sent: [
      { method: 'GET', url: 'http://remit.test/api/me', authorization: 'Bearer rk_live_test' },
      { method: 'GET', url: 'http://remit.test/api/invoices/nope', authorization: 'Bearer rk_live_test' },
    ],
    error: { isRemitApiError: true, status: 404, code: 'not_found' },
    eventType: 'webhook.test',
    refused: true,
  };

  it('imports as an ES module', async () => {
    const script = path.join(project, 'use.mjs');
    await fs.writeFile(
      script,
      `import crypto from 'node:crypto';\nimport * as client from '@remit/client';\n${CHECKS}\n` +
        `console.log(JSON.stringify({ entry: import.meta.resolve('@remit/client'), ...(await check(client)) }));\n`,
    );
    const { stdout } = await run(process.execPath, [script], { cwd: project });
    const { entry, ...result } = JSON.parse(stdout) as { entry: string };
    expect(entry).toMatch(/node_modules\/@remit\/client\/dist\/index\.js$/);
    expect(result).toEqual(expected);
  });

  it('requires as CommonJS', async () => {
    const script = path.join(project, 'use.cjs');
    await fs.writeFile(
      script,
      `const crypto = require('node:crypto');\nconst client = require('@remit/client');\n${CHECKS}\n` +
        `check(client).then((result) => console.log(JSON.stringify({ entry: require.resolve('@remit/client'), ...result })));\n`,
    );
    const { stdout } = await run(process.execPath, [script], { cwd: project });
    const { entry, ...result } = JSON.parse(stdout) as { entry: string };
    expect(entry).toMatch(/node_modules\/@remit\/client\/dist\/cjs\/index\.js$/);
    expect(result).toEqual(expected);
  });

  it('type-checks from an ES module and from CommonJS (node16 resolution)', async () => {
    await fs.writeFile(path.join(project, 'check.mts'), TYPE_CHECKS);
    await fs.writeFile(path.join(project, 'check.cts'), TYPE_CHECKS);
    await fs.writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'node16',
          moduleResolution: 'node16',
          target: 'es2022',
          lib: ['es2022', 'dom'],
          // A Node project's: standardwebhooks' declarations name Buffer. The declarations are checked
          // (no skipLibCheck), ours with the rest.
          typeRoots: [path.join(ROOT, 'node_modules/@types')],
          types: ['node'],
          strict: true,
          noEmit: true,
        },
        files: ['check.mts', 'check.cts'],
      }),
    );
    const { stdout } = await run(process.execPath, [TSC, '-p', project, '--listFiles'], {
      cwd: project,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string }) => {
      const errors = (error.stdout ?? String(error)).split('\n').filter((line) => line.includes('error TS'));
      throw new Error(`tsc failed:\n${errors.join('\n')}`);
    });
    // Each file read the declarations of its own condition: `import` for .mts, `require` for .cts.
    expect(stdout).toContain('node_modules/@remit/client/dist/index.d.ts');
    expect(stdout).toContain('node_modules/@remit/client/dist/cjs/index.d.ts');
  }, 120_000);
});
