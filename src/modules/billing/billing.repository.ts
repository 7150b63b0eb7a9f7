import { and, eq, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { invoices } from '../invoices/invoices.tables.ts';
import { billingIntegrations, billingSyncIntents } from './billing.tables.ts';

export type BillingIntegrationRow = typeof billingIntegrations.$inferSelect;
export type SyncIntentRow = typeof billingSyncIntents.$inferSelect;
export type SyncIntentState = SyncIntentRow['state'];

// ---------------------------------------------------------------------------------------------------
// Integrations (one per organization)

export async function findIntegration(
  db: DbOrTx,
  organizationUid: string,
): Promise<BillingIntegrationRow | undefined> {
  const [row] = await db
    .select()
    .from(billingIntegrations)
    .where(eq(billingIntegrations.organizationUid, organizationUid));
  return row;
}

/** Creates or replaces the organization's integration; `secret` is already sealed. */
export async function upsertIntegration(
  db: DbOrTx,
  organizationUid: string,
  values: { type: BillingIntegrationRow['type']; url: string; secret: string },
): Promise<BillingIntegrationRow> {
  const [row] = await db
    .insert(billingIntegrations)
    .values({
      organizationUid,
      type: values.type,
      url: values.url,
      secret: values.secret,
    })
    .onConflictDoUpdate({
      target: billingIntegrations.organizationUid,
      set: { type: values.type, url: values.url, secret: values.secret, updatedAt: sql`now()` },
    })
    .returning();
  return row!;
}

export async function deleteIntegration(
  db: DbOrTx,
  organizationUid: string,
): Promise<BillingIntegrationRow | undefined> {
  const [row] = await db
    .delete(billingIntegrations)
    .where(eq(billingIntegrations.organizationUid, organizationUid))
    .returning();
  return row;
}

/** Every organization's stored secret (sealed or, from before encryption at rest, plaintext). */
export async function listIntegrationSecretsOfAllOrganizations(
  db: DbOrTx,
): Promise<{ organizationUid: string; secret: string }[]> {
  return db
    .select({ organizationUid: billingIntegrations.organizationUid, secret: billingIntegrations.secret })
    .from(billingIntegrations);
}

/**
 * Replaces the secret only if it is still `previous` (a concurrent reseal or reconfiguration wins).
 * Returns how many rows changed (0 or 1).
 */
export async function replaceIntegrationSecret(
  db: DbOrTx,
  organizationUid: string,
  previous: string,
  secret: string,
): Promise<number> {
  const updated = await db
    .update(billingIntegrations)
    .set({ secret })
    .where(
      and(eq(billingIntegrations.organizationUid, organizationUid), eq(billingIntegrations.secret, previous)),
    )
    .returning({ organizationUid: billingIntegrations.organizationUid });
  return updated.length;
}

// ---------------------------------------------------------------------------------------------------
// The invoice a sync is about (the invoices module's table, read and locked here)

/** The invoice row, locked `for update` for the rest of the transaction; undefined when it is gone. */
export async function lockInvoice(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<typeof invoices.$inferSelect | undefined> {
  const [row] = await tx
    .select()
    .from(invoices)
    .where(and(eq(invoices.organizationUid, organizationUid), eq(invoices.uid, invoiceUid)))
    .for('update');
  return row;
}

// ---------------------------------------------------------------------------------------------------
// Sync intents

/** The highest revision any intent of the invoice used, 0 when there is none. */
export async function maxIntentRevision(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<number> {
  const [used] = await tx
    .select({ max: sql<number | null>`max(${billingSyncIntents.revision})` })
    .from(billingSyncIntents)
    .where(
      and(
        eq(billingSyncIntents.organizationUid, organizationUid),
        eq(billingSyncIntents.invoiceUid, invoiceUid),
      ),
    );
  return Number(used?.max ?? 0);
}

const STALE_IN_PROGRESS_ERROR = 'left in progress (the process stopped before applying it)';

/** The invoice's intents `in_progress` for longer than `staleSeconds` go back to `pending`. */
export async function releaseStaleIntentsOfInvoice(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  staleSeconds: number,
): Promise<void> {
  await tx
    .update(billingSyncIntents)
    .set({
      state: 'pending',
      lastError: STALE_IN_PROGRESS_ERROR,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(billingSyncIntents.organizationUid, organizationUid),
        eq(billingSyncIntents.invoiceUid, invoiceUid),
        eq(billingSyncIntents.state, 'in_progress'),
        lt(billingSyncIntents.updatedAt, sql`now() - make_interval(secs => ${staleSeconds})`),
      ),
    );
}

/**
 * The reconciler's sweep, across every organization: intents `in_progress` for longer than
 * `staleSeconds` go back to `pending`.
 */
export async function releaseStaleIntentsOfAllOrganizations(db: DbOrTx, staleSeconds: number): Promise<void> {
  await db
    .update(billingSyncIntents)
    .set({
      state: 'pending',
      lastError: STALE_IN_PROGRESS_ERROR,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(billingSyncIntents.state, 'in_progress'),
        lt(billingSyncIntents.updatedAt, sql`now() - make_interval(secs => ${staleSeconds})`),
      ),
    );
}

/** One intent of the invoice still `in_progress`, if any. */
export async function findIntentInProgress(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<{ uid: string } | undefined> {
  const [busy] = await tx
    .select({ uid: billingSyncIntents.uid })
    .from(billingSyncIntents)
    .where(
      and(
        eq(billingSyncIntents.organizationUid, organizationUid),
        eq(billingSyncIntents.invoiceUid, invoiceUid),
        eq(billingSyncIntents.state, 'in_progress'),
      ),
    )
    .limit(1);
  return busy;
}

export async function insertIntent(
  tx: DbOrTx,
  organizationUid: string,
  values: Omit<typeof billingSyncIntents.$inferInsert, 'organizationUid'>,
): Promise<SyncIntentRow> {
  const [row] = await tx
    .insert(billingSyncIntents)
    .values({ organizationUid, ...values })
    .returning();
  return row!;
}

export async function findIntentState(
  tx: DbOrTx,
  organizationUid: string,
  intentUid: string,
): Promise<SyncIntentState | undefined> {
  const [row] = await tx
    .select({ state: billingSyncIntents.state })
    .from(billingSyncIntents)
    .where(
      and(eq(billingSyncIntents.organizationUid, organizationUid), eq(billingSyncIntents.uid, intentUid)),
    );
  return row?.state;
}

/**
 * Confirms the intent (one more attempt on it) and every `pending` intent of the invoice at or below
 * its revision.
 */
export async function confirmIntents(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  intent: { uid: string; revision: number },
): Promise<void> {
  await tx
    .update(billingSyncIntents)
    .set({
      state: 'confirmed',
      attempts: sql`${billingSyncIntents.attempts} + case when ${billingSyncIntents.uid} = ${intent.uid} then 1 else 0 end`,
      lastError: null,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(billingSyncIntents.organizationUid, organizationUid),
        eq(billingSyncIntents.invoiceUid, invoiceUid),
        sql`(${billingSyncIntents.uid} = ${intent.uid} or (${billingSyncIntents.state} = 'pending' and ${billingSyncIntents.revision} <= ${intent.revision}))`,
      ),
    );
}

/**
 * One more failed attempt on an intent still `in_progress` or `pending`, which moves to `state`; the
 * intent as it is now, or undefined when it was settled meanwhile.
 */
export async function noteIntentFailure(
  db: DbOrTx,
  organizationUid: string,
  intentUid: string,
  values: { state: 'pending' | 'abandoned'; lastError: string },
): Promise<SyncIntentRow | undefined> {
  const [row] = await db
    .update(billingSyncIntents)
    .set({
      state: values.state,
      attempts: sql`${billingSyncIntents.attempts} + 1`,
      lastError: values.lastError,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(billingSyncIntents.organizationUid, organizationUid),
        eq(billingSyncIntents.uid, intentUid),
        sql`${billingSyncIntents.state} in ('in_progress', 'pending')`,
      ),
    )
    .returning();
  return row;
}

/** Across every organization: the oldest intents `pending` for longer than `olderThanSeconds`. */
export async function listPendingIntentsOfAllOrganizations(
  db: DbOrTx,
  olderThanSeconds: number,
  limit: number,
): Promise<SyncIntentRow[]> {
  return db
    .select()
    .from(billingSyncIntents)
    .where(
      and(
        eq(billingSyncIntents.state, 'pending'),
        lt(billingSyncIntents.createdAt, sql`now() - make_interval(secs => ${olderThanSeconds})`),
      ),
    )
    .orderBy(billingSyncIntents.createdAt)
    .limit(limit);
}

/** Every unfinished (`pending` or `in_progress`) intent of the invoice becomes `abandoned`. */
export async function abandonIntentsOfInvoice(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  lastError: string,
): Promise<void> {
  await tx
    .update(billingSyncIntents)
    .set({
      state: 'abandoned',
      updatedAt: sql`now()`,
      lastError,
    })
    .where(
      and(
        eq(billingSyncIntents.organizationUid, organizationUid),
        eq(billingSyncIntents.invoiceUid, invoiceUid),
        sql`${billingSyncIntents.state} in ('pending', 'in_progress')`,
      ),
    );
}

/** A `pending` intent becomes `in_progress` under a new revision; undefined when it is no longer pending. */
export async function claimPendingIntent(
  tx: DbOrTx,
  organizationUid: string,
  intentUid: string,
  values: { revision: number; idempotencyKey: string; baseRevision: number },
): Promise<SyncIntentRow | undefined> {
  const [claimed] = await tx
    .update(billingSyncIntents)
    .set({
      state: 'in_progress',
      revision: values.revision,
      idempotencyKey: values.idempotencyKey,
      baseRevision: values.baseRevision,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(billingSyncIntents.organizationUid, organizationUid),
        eq(billingSyncIntents.uid, intentUid),
        eq(billingSyncIntents.state, 'pending'),
      ),
    )
    .returning();
  return claimed;
}
