/**
 * The bounded search steps (src/modules/search/search.repository.ts) against the rule they implement,
 * written out as plain SQL: with a few thousand rows per type, every step (newest window, dated window,
 * whole trigram match) is reached, and each must return exactly what the one-statement definition does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawQuery } from '../../src/platform/db/client.ts';
import { containsPattern } from '../../src/platform/db/text-search.ts';
import * as repo from '../../src/modules/search/search.repository.ts';
import { seedOrganization } from '../../src/modules/seed/seed.service.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';

let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
  await seedOrganization(t.db, {
    organizationUid: p.orgA.uid,
    invoices: 3000,
    apRatio: 0.3,
    parties: 2500,
    tasks: 2500,
  });
  // The same kind of rows in another organization: never in orgA's answers.
  await seedOrganization(t.db, {
    organizationUid: p.orgB.uid,
    invoices: 500,
    apRatio: 0.3,
    parties: 300,
    tasks: 300,
  });
}, 240_000);
afterAll(async () => t?.close());

const DEFINITIONS = {
  invoice: {
    find: repo.findInvoices,
    sql: `select uid from invoices where organization_uid = $1 and (invoice_number ilike $2 or client_name ilike $2
            or ((total_cents / 100)::text || '.' || lpad((abs(total_cents) % 100)::text, 2, '0')) ilike $2)
          order by issue_date desc nulls last, uid desc limit $3`,
  },
  customer: {
    find: repo.findCustomers,
    sql: `select uid from parties where organization_uid = $1 and role = 'client' and (name ilike $2 or address ilike $2)
          order by updated_at desc, uid desc limit $3`,
  },
  task: {
    find: repo.findTasks,
    sql: `select uid from work_tasks where organization_uid = $1 and (title ilike $2 or description ilike $2 or status ilike $2)
          order by created_at desc, uid desc limit $3`,
  },
} as const;

// Rare, common, absent, and in between: each pattern reaches a different step for some type.
const PATTERNS = ['zephyr', 'inv', 'xyzq', 'INV-0000', '00.00', 'todo', 'ltd', 'ea', '7'];
const LIMITS = [1, 2, 12, 50];

describe('search at a few thousand rows per type equals its plain-SQL definition', () => {
  for (const [type, def] of Object.entries(DEFINITIONS)) {
    it(`${type}: every pattern and limit`, async () => {
      for (const q of PATTERNS) {
        const pattern = containsPattern(q);
        for (const limit of LIMITS) {
          const got = (await def.find(t.db, p.orgA.uid, pattern, limit)).map((r) => r.uid);
          const expected = (await rawQuery<{ uid: string }>(t.db, def.sql, [p.orgA.uid, pattern, limit])).map(
            (r) => r.uid,
          );
          expect(got, `${type} q=${q} limit=${limit}`).toEqual(expected);
        }
      }
    }, 120_000);
  }
});
