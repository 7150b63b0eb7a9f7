import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call, expectErrorBody } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { commonRouteChecks } from '../helpers/route-checks.ts';

let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_MAX: '100000' } });
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

const fields = (query: string, key = p.orgA.admin.key) =>
  call(t.app, 'GET', `/api/email/fields${query}`, { key });

describe('GET /api/email/fields', () => {
  it('lists the tokens of interface 2.9 for invoices, each with a description and an example', async () => {
    const res = await fields('?context_type=invoice');
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', status_code: 200, message: expect.any(String) });
    const items = res.body.data.items as { token: string; description: string; example: string }[];
    expect(items.map((i) => i.token)).toEqual([
      '{invoice_number}',
      '{issue_date}',
      '{due_date}',
      '{amount_due}',
      '{total_cents}',
      '{days_overdue}',
      '{client_name}',
      '{client_email}',
      '{payment_link}',
      '{organization_name}',
      '{current_date}',
      '{hosted_invoice_url}',
    ]);
    for (const item of items) {
      expect(Object.keys(item).sort()).toEqual(['description', 'example', 'token']);
      expect(item.description.length).toBeGreaterThan(0);
      expect(item.example.length).toBeGreaterThan(0);
    }
    const example = (token: string) => items.find((i) => i.token === token)!.example;
    expect(example('{due_date}')).toMatch(/^[A-Z][a-z]+ \d{1,2}, \d{4}$/);
    expect(example('{amount_due}')).toMatch(/^\$[\d,]+\.\d{2}$/);
    expect(example('{days_overdue}')).toMatch(/^\d+$/);
  });

  it('400 for an unknown or missing context_type', async () => {
    expectErrorBody(await fields('?context_type=work_task'), 400, 'invalid_parameter');
    expectErrorBody(await fields('?context_type='), 400, 'invalid_parameter');
    const missing = expectErrorBody(await fields(''), 400, 'invalid_parameter');
    expect(missing.message).toContain('context_type');
  });

  it('email:read is enough, for a member too', async () => {
    expect((await fields('?context_type=invoice', await p.keyWithScopes(['email:read']))).status).toBe(200);
    expect(
      (await fields('?context_type=invoice', await p.keyWithScopes(['email:read'], 'member'))).status,
    ).toBe(200);
  });

  commonRouteChecks(
    'GET /api/email/fields',
    { method: 'GET', url: () => '/api/email/fields?context_type=invoice', scope: 'email:read' },
    () => ({ t, p }),
  );
});
