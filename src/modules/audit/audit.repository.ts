import { and, count, eq, gte, inArray, lt, lte, or, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { auditEvents } from './audit.tables.ts';

export type AuditEventRow = typeof auditEvents.$inferSelect;
export type AuditEventInsert = typeof auditEvents.$inferInsert;

/** Every event of one change in one statement (a batch of line items is one INSERT, not one each). */
export async function insertEvents(db: DbOrTx, rows: AuditEventInsert[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insert(auditEvents).values(rows);
}

export interface AuditEventFilters {
  actorType?: AuditEventRow['actorType'] | undefined;
  actorUid?: string | undefined;
  actorUserUid?: string | undefined;
  entityType?: string | undefined;
  /** The entity itself, or what belongs to it (parent_entity_uid). */
  entityUid?: string | undefined;
  action?: string | undefined;
  from?: Date | undefined;
  /** Inclusive unless `toExclusive`. */
  to?: Date | undefined;
  toExclusive?: boolean | undefined;
}

function conditions(organizationUid: string, f: AuditEventFilters): SQL | undefined {
  const where: (SQL | undefined)[] = [eq(auditEvents.organizationUid, organizationUid)];
  if (f.actorType) where.push(eq(auditEvents.actorType, f.actorType));
  if (f.actorUid) where.push(eq(auditEvents.actorUid, f.actorUid));
  if (f.actorUserUid) where.push(eq(auditEvents.actorUserUid, f.actorUserUid));
  if (f.entityType) where.push(eq(auditEvents.entityType, f.entityType));
  if (f.entityUid) {
    where.push(or(eq(auditEvents.entityUid, f.entityUid), eq(auditEvents.parentEntityUid, f.entityUid)));
  }
  if (f.action) where.push(eq(auditEvents.action, f.action));
  if (f.from) where.push(gte(auditEvents.occurredAt, f.from));
  if (f.to) where.push(f.toExclusive ? lt(auditEvents.occurredAt, f.to) : lte(auditEvents.occurredAt, f.to));
  return and(...where);
}

/** One page, newest first, and the number of events that match. */
export async function listEvents(
  db: DbOrTx,
  organizationUid: string,
  filters: AuditEventFilters,
  limit: number,
  offset: number,
): Promise<{ rows: AuditEventRow[]; total: number }> {
  const where = conditions(organizationUid, filters);
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(auditEvents)
      .where(where)
      // Spelled as the indexes are built (DESC NULLS LAST), so every filter's index serves the order.
      .orderBy(sql`${auditEvents.occurredAt} desc nulls last`, sql`${auditEvents.id} desc nulls last`)
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(auditEvents).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

/**
 * Deletes up to `limit` events of any organization that occurred before `cutoff`; returns how many.
 * The retention job's, as the owner: the tenant role may not delete events at all.
 */
export async function deleteEventsBefore(db: DbOrTx, cutoff: Date, limit: number): Promise<number> {
  const batch = db
    .select({ uid: auditEvents.uid })
    .from(auditEvents)
    .where(lt(auditEvents.occurredAt, cutoff))
    .limit(limit);
  const deleted = await db
    .delete(auditEvents)
    .where(inArray(auditEvents.uid, batch))
    .returning({ uid: auditEvents.uid });
  return deleted.length;
}
