import { and, asc, count, desc, eq, getTableColumns, gte, inArray, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { events, webhookDeliveries, webhookEndpoints } from './webhooks.tables.ts';

export type EndpointRow = typeof webhookEndpoints.$inferSelect;
export type EventRow = typeof events.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;

// ---- endpoints ----

export async function insertEndpoint(
  db: DbOrTx,
  values: Pick<
    typeof webhookEndpoints.$inferInsert,
    'uid' | 'organizationUid' | 'url' | 'description' | 'eventTypes' | 'enabled' | 'secret'
  >,
): Promise<EndpointRow> {
  const [row] = await db.insert(webhookEndpoints).values(values).returning();
  return row!;
}

export async function findEndpoint(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  options: { forUpdate?: boolean; forNoKeyUpdate?: boolean } = {},
): Promise<EndpointRow | undefined> {
  const query = db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.organizationUid, organizationUid), eq(webhookEndpoints.uid, uid)));
  const [row] = options.forUpdate
    ? await query.for('update')
    : options.forNoKeyUpdate
      ? await query.for('no key update')
      : await query;
  return row;
}

export async function listEndpoints(
  db: DbOrTx,
  organizationUid: string,
  page: { limit: number; offset: number },
): Promise<{ items: EndpointRow[]; total: number }> {
  const where = eq(webhookEndpoints.organizationUid, organizationUid);
  const items = await db
    .select()
    .from(webhookEndpoints)
    .where(where)
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.uid))
    .limit(page.limit)
    .offset(page.offset);
  const [total] = await db.select({ n: count() }).from(webhookEndpoints).where(where);
  return { items, total: Number(total?.n ?? 0) };
}

export async function updateEndpoint(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof webhookEndpoints.$inferInsert>,
): Promise<EndpointRow | undefined> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(webhookEndpoints.organizationUid, organizationUid), eq(webhookEndpoints.uid, uid)))
    .returning();
  return row;
}

export async function deleteEndpoint(db: DbOrTx, organizationUid: string, uid: string): Promise<boolean> {
  const rows = await db
    .delete(webhookEndpoints)
    .where(and(eq(webhookEndpoints.organizationUid, organizationUid), eq(webhookEndpoints.uid, uid)))
    .returning({ uid: webhookEndpoints.uid });
  return rows.length > 0;
}

/** The enabled endpoints an event of `type` goes to: those subscribed to it, or to everything. */
export async function endpointsFor(
  db: DbOrTx,
  organizationUid: string,
  type: string,
): Promise<{ uid: string }[]> {
  return db
    .select({ uid: webhookEndpoints.uid })
    .from(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.organizationUid, organizationUid),
        eq(webhookEndpoints.enabled, true),
        sql`(cardinality(${webhookEndpoints.eventTypes}) = 0 or ${type} = any(${webhookEndpoints.eventTypes}))`,
      ),
    )
    .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.uid));
}

// ---- events ----

export async function insertEvent(
  db: DbOrTx,
  values: Pick<
    typeof events.$inferInsert,
    'organizationUid' | 'type' | 'entityType' | 'entityUid' | 'payload'
  >,
): Promise<EventRow> {
  const [row] = await db.insert(events).values(values).returning();
  return row!;
}

export async function findEvent(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<EventRow | undefined> {
  const [row] = await db
    .select()
    .from(events)
    .where(and(eq(events.organizationUid, organizationUid), eq(events.uid, uid)));
  return row;
}

export async function listEvents(
  db: DbOrTx,
  organizationUid: string,
  filter: { since: Date; type?: string | undefined; entityUid?: string | undefined },
  page: { limit: number; offset: number },
): Promise<{ items: EventRow[]; total: number }> {
  const where = and(
    eq(events.organizationUid, organizationUid),
    gte(events.createdAt, filter.since),
    filter.type !== undefined ? eq(events.type, filter.type) : undefined,
    filter.entityUid !== undefined ? eq(events.entityUid, filter.entityUid) : undefined,
  );
  const items = await db
    .select()
    .from(events)
    .where(where)
    .orderBy(desc(events.createdAt), desc(events.id))
    .limit(page.limit)
    .offset(page.offset);
  const [total] = await db.select({ n: count() }).from(events).where(where);
  return { items, total: Number(total?.n ?? 0) };
}

/** Retention: events (and their deliveries, by cascade) older than `before`, of every organization. */
export async function purgeEventsBefore(db: DbOrTx, before: Date, limit: number): Promise<number> {
  const batch = db.select({ uid: events.uid }).from(events).where(lt(events.createdAt, before)).limit(limit);
  const deleted = await db.delete(events).where(inArray(events.uid, batch)).returning({ uid: events.uid });
  return deleted.length;
}

// ---- deliveries ----

export async function insertDeliveries(
  db: DbOrTx,
  values: Pick<
    typeof webhookDeliveries.$inferInsert,
    'organizationUid' | 'endpointUid' | 'eventUid' | 'entityType' | 'entityUid' | 'nextAttemptAt'
  >[],
): Promise<DeliveryRow[]> {
  if (values.length === 0) return [];
  return db.insert(webhookDeliveries).values(values).returning();
}

export type DeliveryWithEvent = DeliveryRow & { eventType: string };

const withEventType = { ...getTableColumns(webhookDeliveries), eventType: events.type };

export async function findDelivery(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
): Promise<DeliveryWithEvent | undefined> {
  const [row] = await db
    .select(withEventType)
    .from(webhookDeliveries)
    .innerJoin(events, eq(events.uid, webhookDeliveries.eventUid))
    .where(and(eq(webhookDeliveries.organizationUid, organizationUid), eq(webhookDeliveries.uid, uid)));
  return row;
}

export async function listDeliveries(
  db: DbOrTx,
  organizationUid: string,
  endpointUid: string,
  filter: { status?: string | undefined },
  page: { limit: number; offset: number },
): Promise<{ items: DeliveryWithEvent[]; total: number }> {
  const where = and(
    eq(webhookDeliveries.organizationUid, organizationUid),
    eq(webhookDeliveries.endpointUid, endpointUid),
    filter.status !== undefined
      ? eq(webhookDeliveries.status, filter.status as DeliveryRow['status'])
      : undefined,
  );
  const items = await db
    .select(withEventType)
    .from(webhookDeliveries)
    .innerJoin(events, eq(events.uid, webhookDeliveries.eventUid))
    .where(where)
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(page.limit)
    .offset(page.offset);
  const [total] = await db.select({ n: count() }).from(webhookDeliveries).where(where);
  return { items, total: Number(total?.n ?? 0) };
}

/**
 * Takes one delivery for an attempt, or nothing when it is not due, is held by another worker's lease,
 * its endpoint is disabled, an earlier delivery of the same entity to the same endpoint is still
 * pending (per-entity order), or (given `caps`) its endpoint or organization has as many attempts in
 * flight as they may. The attempt is counted now, before the call: a worker killed mid-send
 * leaves the row pending, and it is taken again once `leasedUntil` has passed (at least once).
 */
export async function claimDelivery(
  db: DbOrTx,
  uid: string,
  now: Date,
  leasedUntil: Date,
  caps?: InFlightCaps,
): Promise<DeliveryRow | undefined> {
  const at = now.toISOString();
  const [row] = await db
    .update(webhookDeliveries)
    .set({
      attempts: sql`${webhookDeliveries.attempts} + 1`,
      leasedUntil,
      firstAttemptAt: sql`coalesce(${webhookDeliveries.firstAttemptAt}, ${at}::timestamptz)`,
      lastAttemptAt: now,
      updatedAt: sql`now()`,
    })
    .where(and(eq(webhookDeliveries.uid, uid), claimable(at), caps ? underCaps(at, caps) : undefined))
    .returning();
  return row;
}

/** No earlier delivery of the same entity to the same endpoint is still waiting (per-entity order). */
const firstOfEntity = sql`not exists (select 1 from ${webhookDeliveries} earlier
                   where earlier.endpoint_uid = ${webhookDeliveries.endpointUid}
                     and earlier.entity_type = ${webhookDeliveries.entityType}
                     and earlier.entity_uid = ${webhookDeliveries.entityUid}
                     and earlier.status in ('pending', 'failed') and earlier.id < ${webhookDeliveries.id})`;

const claimable = (at: string) => sql`${webhookDeliveries.status} in ('pending', 'failed')
  and ${webhookDeliveries.nextAttemptAt} <= ${at}::timestamptz
  and (${webhookDeliveries.leasedUntil} is null or ${webhookDeliveries.leasedUntil} <= ${at}::timestamptz)
  and exists (select 1 from ${webhookEndpoints} e
               where e.uid = ${webhookDeliveries.endpointUid} and e.enabled)
  and ${firstOfEntity}`;

/** What in-flight caps a claim honours: attempts leased and not settled, counted over all processes. */
export interface InFlightCaps {
  endpoint: number;
  organization: number;
}

/** Attempts of the delivery's endpoint (other than itself) leased and not settled at `at`. */
const inFlightOfEndpoint = (at: string) => sql`(select count(*) from ${webhookDeliveries} f
   where f.endpoint_uid = ${webhookDeliveries.endpointUid} and f.uid <> ${webhookDeliveries.uid}
     and f.status in ('pending', 'failed') and f.leased_until > ${at}::timestamptz)`;

/** Attempts of the delivery's organization (other than itself) leased and not settled at `at`. */
const inFlightOfOrganization = (at: string) => sql`(select count(*) from ${webhookDeliveries} f
   where f.endpoint_uid in (select e.uid from ${webhookEndpoints} e
                             where e.organization_uid = ${webhookDeliveries.organizationUid})
     and f.uid <> ${webhookDeliveries.uid}
     and f.status in ('pending', 'failed') and f.leased_until > ${at}::timestamptz)`;

const underCaps = (at: string, caps: InFlightCaps) =>
  sql`${inFlightOfEndpoint(at)} < ${caps.endpoint} and ${inFlightOfOrganization(at)} < ${caps.organization}`;

/**
 * Serializes, until the transaction ends, the claims and settlements of one organization's deliveries
 * (a transaction-scoped advisory lock on the delivery's organization), so in-flight caps hold exactly
 * across processes. Taken before any row lock. Returns the delivery's organization, or nothing.
 */
export async function lockDeliveryOrganization(db: DbOrTx, deliveryUid: string): Promise<string | undefined> {
  const result = await db.execute(sql`
    select organization_uid,
           pg_advisory_xact_lock(hashtextextended('remit.webhooks.' || organization_uid::text, 0))::text
      from ${webhookDeliveries} where uid = ${deliveryUid}`);
  const list = (result as unknown as { rows: { organization_uid: string }[] }).rows;
  return list[0]?.organization_uid;
}

/**
 * The delivery of an organization that goes next once one of its attempts has settled (a slot free):
 * the oldest that could be claimed now and whose endpoint is under its cap. It may have been passed
 * over while the caps were full; its own job may be gone.
 */
export async function nextUnderCaps(
  db: DbOrTx,
  organizationUid: string,
  now: Date,
  caps: InFlightCaps,
): Promise<DeliveryRow | undefined> {
  const at = now.toISOString();
  const [row] = await db
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.organizationUid, organizationUid),
        claimable(at),
        sql`${inFlightOfEndpoint(at)} < ${caps.endpoint}`,
      ),
    )
    .orderBy(asc(webhookDeliveries.nextAttemptAt), asc(webhookDeliveries.id))
    .limit(1);
  return row;
}

/**
 * An endpoint enabled again: its waiting deliveries that are first of their entity (the others follow
 * each as the one before it settles) go now, whatever retry time they had; returned to be enqueued.
 */
export async function releaseWaitingOfEndpoint(
  db: DbOrTx,
  organizationUid: string,
  endpointUid: string,
  now: Date,
  limit: number,
): Promise<DeliveryRow[]> {
  const at = now.toISOString();
  const heads = db
    .select({ uid: webhookDeliveries.uid })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.organizationUid, organizationUid),
        eq(webhookDeliveries.endpointUid, endpointUid),
        inArray(webhookDeliveries.status, ['pending', 'failed']),
        firstOfEntity,
      ),
    )
    .orderBy(asc(webhookDeliveries.id))
    .limit(limit);
  return db
    .update(webhookDeliveries)
    .set({
      nextAttemptAt: sql`least(${webhookDeliveries.nextAttemptAt}, ${at}::timestamptz)`,
      updatedAt: sql`now()`,
    })
    .where(and(eq(webhookDeliveries.organizationUid, organizationUid), inArray(webhookDeliveries.uid, heads)))
    .returning();
}

/** Deliveries of every organization that could be claimed now, oldest first (the sweep's work list). */
export async function dueDeliveries(db: DbOrTx, now: Date, limit: number): Promise<{ uid: string }[]> {
  return db
    .select({ uid: webhookDeliveries.uid })
    .from(webhookDeliveries)
    .where(claimable(now.toISOString()))
    .orderBy(asc(webhookDeliveries.nextAttemptAt), asc(webhookDeliveries.id))
    .limit(limit);
}

/** The next pending delivery of the same entity to the same endpoint, once `delivery` is settled. */
export async function nextOfEntity(db: DbOrTx, delivery: DeliveryRow): Promise<DeliveryRow | undefined> {
  const [row] = await db
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.organizationUid, delivery.organizationUid),
        eq(webhookDeliveries.endpointUid, delivery.endpointUid),
        eq(webhookDeliveries.entityType, delivery.entityType),
        eq(webhookDeliveries.entityUid, delivery.entityUid),
        inArray(webhookDeliveries.status, ['pending', 'failed']),
        sql`${webhookDeliveries.id} > ${delivery.id}`,
      ),
    )
    .orderBy(asc(webhookDeliveries.id))
    .limit(1);
  return row;
}

export async function settleDelivery(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof webhookDeliveries.$inferInsert>,
): Promise<DeliveryRow | undefined> {
  const [row] = await db
    .update(webhookDeliveries)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(webhookDeliveries.organizationUid, organizationUid), eq(webhookDeliveries.uid, uid)))
    .returning();
  return row;
}

/** Every organization's endpoint secrets, for `remit secrets rotate` (resealing). */
export async function listEndpointSecretsOfAllOrganizations(db: DbOrTx) {
  return db
    .select({
      uid: webhookEndpoints.uid,
      secret: webhookEndpoints.secret,
      previousSecret: webhookEndpoints.previousSecret,
    })
    .from(webhookEndpoints);
}

/** One more failed attempt: counted, and `failing_since` set unless it already is. */
export async function noteEndpointFailure(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  now: Date,
): Promise<EndpointRow | undefined> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({
      consecutiveFailures: sql`${webhookEndpoints.consecutiveFailures} + 1`,
      failingSince: sql`coalesce(${webhookEndpoints.failingSince}, ${now.toISOString()}::timestamptz)`,
      updatedAt: sql`now()`,
    })
    .where(and(eq(webhookEndpoints.organizationUid, organizationUid), eq(webhookEndpoints.uid, uid)))
    .returning();
  return row;
}

/** Replaces sealed secrets only if they are still what was read (a rotation meanwhile wins). */
export async function replaceEndpointSecrets(
  db: DbOrTx,
  read: { uid: string; secret: string; previousSecret: string | null },
  values: { secret?: string; previousSecret?: string },
): Promise<number> {
  const rows = await db
    .update(webhookEndpoints)
    .set(values)
    .where(
      and(
        eq(webhookEndpoints.uid, read.uid),
        eq(webhookEndpoints.secret, read.secret),
        read.previousSecret === null
          ? sql`${webhookEndpoints.previousSecret} is null`
          : eq(webhookEndpoints.previousSecret, read.previousSecret),
      ),
    )
    .returning({ uid: webhookEndpoints.uid });
  return rows.length;
}
