import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { call } from '../helpers/http.ts';
import { createPrincipals, type Principals } from '../helpers/principals.ts';
import { addUserToOrganization } from '../../src/modules/tenancy/tenancy.service.ts';

let t: TestApp;
let p: Principals;

beforeAll(async () => {
  t = await createTestApp();
  p = await createPrincipals(t);
});
afterAll(async () => t?.close());

const memberships = async (key: string) =>
  (await call(t.app, 'GET', '/api/me', { key })).body.data.memberships as {
    organization_uid: string;
    organization_name: string;
    role: string;
  }[];

// Authentication reuses memberships it already read while the user's auth_version is unchanged; every
// change must show on the very next request.
describe('memberships seen by authentication', () => {
  it('a new membership shows on the next request', async () => {
    const key = p.orgA.member.key;
    expect(await memberships(key)).toHaveLength(1);
    await addUserToOrganization(t.db, t.config.apiKeyPepper, {
      organizationUid: p.orgB.uid,
      email: p.orgA.member.email,
      role: 'admin',
    });
    const after = await memberships(key);
    expect(after.map((m) => m.organization_uid).sort()).toEqual([p.orgA.uid, p.orgB.uid].sort());
  });

  it('a role change and a removal show on the next request', async () => {
    const key = p.orgA.member.key;
    await memberships(key);
    await t.db.execute(
      sql`update memberships set role = 'admin' where organization_uid = ${p.orgA.uid} and user_uid = ${p.orgA.member.userUid}`,
    );
    expect((await memberships(key)).find((m) => m.organization_uid === p.orgA.uid)?.role).toBe('admin');
    await t.db.execute(
      sql`delete from memberships where organization_uid = ${p.orgB.uid} and user_uid = ${p.orgA.member.userUid}`,
    );
    expect((await memberships(key)).map((m) => m.organization_uid)).toEqual([p.orgA.uid]);
  });

  it("an organization's new name shows on the next request", async () => {
    const key = p.orgA.admin.key;
    await memberships(key);
    await t.db.execute(sql`update organizations set name = 'Renamed A' where uid = ${p.orgA.uid}`);
    expect((await memberships(key))[0]!.organization_name).toBe('Renamed A');
  });
});
