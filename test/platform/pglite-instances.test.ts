import { describe, expect, inject, it } from 'vitest';
import { givePglite, takePglite } from '../helpers/pglite-instances.ts';
import { engine } from '../helpers/test-database.ts';

/**
 * The test kit hands a file's PGlite on to the next file (test/helpers/pglite-instances.ts): only when
 * it is put back exactly as the run's dump made it. Rows and queues go; a changed schema, a changed row
 * of the dump's own or a transaction left open mean a fresh instance instead.
 */
describe.skipIf(engine !== 'pglite')('PGlite instances handed from file to file', () => {
  const dump = () => inject('pgliteDump');
  const count = async (lite: Awaited<ReturnType<typeof takePglite>>, table: string) =>
    (await lite.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;

  it('comes back with no rows, no queues and fresh sequences, as the same instance', async () => {
    const lite = await takePglite(dump());
    await lite.exec(`insert into organizations (name) values ('Left behind')`);
    await lite.exec(`select pgboss.create_queue('test.left-behind', '{"policy":"standard"}')`);
    await lite.exec(`insert into pgboss.job (name, data) values ('test.left-behind', '{}')`);
    await lite.exec(`select nextval('audit_events_id_seq')`);
    await lite.exec(`set statement_timeout = 1234`);
    await givePglite(lite);

    const again = await takePglite(dump());
    try {
      expect(again).toBe(lite);
      expect(await count(again, 'organizations')).toBe(0);
      expect(await count(again, 'pgboss.queue')).toBe(0);
      expect(await count(again, 'pgboss.job')).toBe(0);
      expect(await count(again, 'remit_migrations')).toBeGreaterThan(0);
      const [seq] = (await again.query<{ n: number }>(`select nextval('audit_events_id_seq')::int as n`))
        .rows;
      expect(seq!.n).toBe(1);
      const [timeout] = (await again.query<{ t: string }>(`show statement_timeout`)).rows;
      expect(timeout!.t).not.toBe('1234ms');
    } finally {
      await givePglite(again);
    }
  });

  for (const [what, change] of [
    ['a table made', `create table left_behind (id int)`],
    ['a column added', `alter table organizations add column left_behind int`],
    ['a trigger disabled', `alter table invoices disable trigger invoices_view_truncate`],
    ['a role made', `create role left_behind_role`],
    [
      'a row of the dump changed',
      `delete from remit_migrations where tag = (select max(tag) from remit_migrations)`,
    ],
    ['a transaction left open', `begin`],
  ] as const) {
    it(`is not handed on after ${what}: the next file gets a fresh one`, async () => {
      const lite = await takePglite(dump());
      await lite.exec(change);
      await givePglite(lite);
      const next = await takePglite(dump());
      try {
        expect(next).not.toBe(lite);
        expect(lite.closed).toBe(true);
        expect(await count(next, 'remit_migrations')).toBeGreaterThan(0);
      } finally {
        await givePglite(next);
      }
    });
  }
});
