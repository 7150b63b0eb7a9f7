import crypto from 'node:crypto';
import type { InjectOptions } from 'light-my-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FakePartner } from '../helpers/fake-partner.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * Requests of every kind that carry a credential, with the logs captured at the most verbose level:
 * no credential appears in any line (docs/security.md#logs).
 */
const lines: string[] = [];
let t: TestApp;
let p: Principals;
let partner: FakePartner;

beforeAll(async () => {
  t = await createTestApp({ logStream: { write: (line: string) => void lines.push(line) } });
  p = await createPrincipals(t);
  partner = await FakePartner.start(`whsec_${crypto.randomBytes(16).toString('hex')}`);
});
afterAll(async () => {
  await partner?.close();
  await t?.close();
});

const secret = (label: string) => `${label}-${crypto.randomBytes(10).toString('hex')}`;

describe('nothing secret in the logs', () => {
  it('keys, cookies, idempotency keys, signed URLs, integration secrets and SMTP passwords stay out', async () => {
    const seen: string[] = [];
    const inject = (options: InjectOptions) => t.app.inject(options);
    const auth = { authorization: `Bearer ${p.orgA.admin.key}` };
    seen.push(p.orgA.admin.key);

    // An authenticated read, with a cookie and a request id.
    const cookie = secret('cookie');
    seen.push(cookie);
    await inject({ method: 'GET', url: '/api/me', headers: { ...auth, cookie: `session=${cookie}` } });
    // A refused key (401) is logged as a failure, without the key.
    const badKey = `rk_live_${secret('bad')}`;
    seen.push(badKey);
    await inject({ method: 'GET', url: '/api/me', headers: { authorization: `Bearer ${badKey}` } });

    // A new API key: the plaintext is in the response only; the Idempotency-Key in no log.
    const idem = secret('idem');
    seen.push(idem);
    const created = await inject({
      method: 'POST',
      url: '/api/api-keys',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': idem },
      payload: { name: 'Logged?' },
    });
    expect(created.statusCode).toBe(200);
    seen.push(created.json().data.key as string);

    // The billing secret, accepted and refused (a URL the rules refuse: 422).
    const billing = secret('whsec');
    seen.push(billing);
    for (const url of [partner.url(), 'ftp://billing.example.com/']) {
      await inject({
        method: 'PUT',
        url: `/api/organization/${p.orgA.uid}/integrations/billing`,
        headers: { ...auth, 'content-type': 'application/json' },
        payload: { type: 'http', url, secret: billing },
      });
    }

    // SMTP URLs with passwords, accepted and refused.
    const password = secret('smtppw');
    seen.push(password);
    for (const smtpUrl of [
      `smtps://ar:${password}@smtp.acme.test:2465`,
      `smtps://ar:${password}@smtp.acme.test:2465/not-allowed?x=1`,
      `gopher://ar:${password}@smtp.acme.test`,
    ]) {
      await inject({
        method: 'POST',
        url: '/api/email/accounts',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: { email: `${crypto.randomUUID()}@acme.test`, display_name: 'AR', smtp_url: smtpUrl },
      });
    }

    // A presigned download URL: its signature is a credential for as long as it lives.
    const signature = crypto.randomBytes(32).toString('hex');
    seen.push(signature);
    await inject({
      method: 'GET',
      url: `/storage/remit/x/y.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20260101&X-Amz-Date=20260101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=${signature}`,
    });

    const log = lines.join('');
    // The capture works: the requests are there, with their (redacted) URLs.
    expect(log).toContain('/api/email/accounts');
    expect(log).toContain('X-Amz-Signature=[redacted]');
    for (const value of seen) expect(log, `found in the logs: ${value.slice(0, 12)}…`).not.toContain(value);
  });
});
