import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

/**
 * The role matrix of docs/authentication.md, walked route by route for an admin and a member of the
 * organization. The table is the source: a route the app has and the table lacks (or the reverse)
 * fails, and each row's outcome is checked for both roles.
 */
type Outcome = 'yes' | 'no' | 'own' | 'visible' | 'session';
interface Row {
  method: string;
  path: string;
  admin: Outcome;
  member: Outcome;
}

function readMatrix(): Row[] {
  const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/authentication.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### The role matrix'));
  const end = section.indexOf('\n## ');
  return [
    ...(end > 0 ? section.slice(0, end) : section).matchAll(
      /^\|\s*`(GET|POST|PUT|PATCH|DELETE) ([^`]+)`\s*\|\s*(\w+)\s*\|\s*(\w+)\s*\|/gm,
    ),
  ].map((m) => ({ method: m[1]!, path: m[2]!, admin: m[3] as Outcome, member: m[4] as Outcome }));
}

/** Bodies that pass validation on the routes a member is refused, so the refusal itself is what answers. */
const VALID_BODIES: Record<string, unknown> = {
  'PUT /api/organization/{organization_uid}/integrations/billing': {
    type: 'http',
    url: 'https://billing.example.test/sync',
    secret: 'a-long-enough-shared-secret-0123456789',
  },
  'POST /api/email/accounts': { email: 'ar@acme.test', display_name: 'AR' },
  'PATCH /api/organization/{organization_uid}/settings': { segregation_of_duties: false },
  'POST /api/auth/totp/enable': { code: '123456' },
  'POST /api/auth/totp/disable': { code: '123456' },
  'PATCH /api/organization/{organization_uid}/members/{user_uid}': { role: 'member' },
  'POST /api/organization/{organization_uid}/invitations': {
    email: `matrix-${crypto.randomUUID()}@example.test`,
    role: 'member',
  },
  // Takes no body.
  'POST /api/organization/{organization_uid}/invitations/{uid}/resend': {},
  'POST /api/organization/{organization_uid}/webhook-endpoints': { url: 'https://hooks.example.test/remit' },
  'POST /api/approval-policies': { name: 'Matrix', approver_roles: ['admin'] },
  'POST /api/metrics/compute': {},
  'PATCH /api/approval-policies/{uid}': { name: 'Matrix' },
  'PATCH /api/organization/{organization_uid}/webhook-endpoints/{uid}': { description: 'ERP' },
  'POST /api/organization/{organization_uid}/webhook-endpoints/{uid}/rotate-secret': {},
  'POST /api/organization/{organization_uid}/webhook-endpoints/{uid}/test': {},
  'POST /api/organization/{organization_uid}/webhook-endpoints/deliveries/{delivery_uid}/resend': {},
  'POST /api/invoices/{uid}/payments/{payment_uid}/refund': { reason: 'Matrix' },
  'POST /api/invoices/{uid}/payments/{payment_uid}/void': { reason: 'Matrix' },
  'POST /api/invoices/{uid}/credit-notes': { amount_cents: 100, reason: 'other' },
  'POST /api/invoices/{uid}/credit-notes/{credit_note_uid}/void': {},
};

let t: TestApp;
let p: Principals;
let matrix: Row[];

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
  matrix = readMatrix();
});
afterAll(async () => t?.close());

const concrete = (route: string) =>
  route.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (name === 'organization_uid') return p.orgA.uid;
    if (name === 'context_type') return 'ORGANIZATION';
    if (name === 'metric_uid') return 'some_metric';
    return crypto.randomUUID();
  });

describe('the role matrix (docs/authentication.md)', () => {
  it('lists every API route of the app, and no other', () => {
    const routes = new Set(
      t.app.routeList
        .filter((r) => r.method !== 'HEAD' && r.url.startsWith('/api/') && r.url !== '/api/openapi.json')
        .map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`),
    );
    const documented = new Set(matrix.map((r) => `${r.method} ${r.path}`));
    expect(
      [...routes].filter((r) => !documented.has(r)),
      'routes missing from the matrix',
    ).toEqual([]);
    expect(
      [...documented].filter((r) => !routes.has(r)),
      'rows with no route',
    ).toEqual([]);
    expect(matrix.every((r) => r.admin === 'yes' || (r.admin === 'session' && r.member === 'session'))).toBe(
      true,
    );
  });

  it('each row holds for both roles: "no" is 403, anything else is never 401 or 403', async () => {
    const problems: string[] = [];
    for (const row of matrix) {
      const key = `${row.method} ${row.path}`;
      for (const role of ['admin', 'member'] as const) {
        const res = await call(t.app, row.method, concrete(row.path), {
          key: role === 'admin' ? p.orgA.admin.key : p.orgA.member.key,
          ...(['POST', 'PUT', 'PATCH'].includes(row.method) ? { body: VALID_BODIES[key] ?? {} } : {}),
        });
        const expected = row[role];
        if (expected === 'session') {
          if (res.status !== 403 || !res.raw.includes('session_required')) {
            problems.push(`${role} ${key}: ${res.status}, not 403 session_required with a key`);
          }
          continue;
        }
        if (expected === 'no' && res.status !== 403) problems.push(`${role} ${key}: ${res.status}, not 403`);
        if (expected !== 'no' && (res.status === 403 || res.status === 401)) {
          problems.push(`${role} ${key}: ${res.status} ${res.raw}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('every "no" for a member has a body that passes validation (so the 403 is the role, not the input)', () => {
    for (const row of matrix.filter(
      (r) => r.member === 'no' && ['POST', 'PUT', 'PATCH'].includes(r.method),
    )) {
      expect(VALID_BODIES[`${row.method} ${row.path}`], `${row.method} ${row.path}`).toBeDefined();
    }
  });
});
