import crypto from 'node:crypto';
import { and, eq, lt, lte, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { assertPublicTarget, OutboundError, sendOutbound } from '../../platform/http/outbound.ts';
import { requireAdmin, type RequestContext } from '../../platform/http/context.ts';
import { billingIntegrations, billingSyncIntents, invoices } from '../invoices/invoices.tables.ts';
import { upsertIntegration, type InvoiceRow } from '../invoices/invoices.repository.ts';

export type BillingIntegration = typeof billingIntegrations.$inferSelect;
export type SyncIntent = typeof billingSyncIntents.$inferSelect;

export interface BillingOptions {
  allowPrivateNetworkTargets: boolean;
  timeoutMs: number;
}

export const INTEGRATION_NAME = 'billing';
export const SIGNATURE_HEADER = 'Remit-Signature';

export function toIntegrationView(row: BillingIntegration) {
  return {
    organization_uid: row.organizationUid,
    type: row.type,
    url: row.url,
    has_secret: true,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA-256 of "<t>.<body>">` — the timestamp stops replays of old bodies. */
export function signBody(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): string {
  const mac = crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

export function syncIdempotencyKey(invoiceUid: string, revision: number): string {
  return `${invoiceUid}:${revision}`;
}

export async function findBillingIntegration(
  db: DbOrTx,
  organizationUid: string,
): Promise<BillingIntegration | undefined> {
  const [row] = await db
    .select()
    .from(billingIntegrations)
    .where(eq(billingIntegrations.organizationUid, organizationUid));
  return row;
}

export async function configureBillingIntegration(
  db: Db,
  ctx: RequestContext,
  body: { type: 'http'; url: string; secret: string },
  options: BillingOptions,
): Promise<{ created: boolean; integration: ReturnType<typeof toIntegrationView> }> {
  requireAdmin(ctx);
  const url = await assertPublicTarget(body.url, options.allowPrivateNetworkTargets);
  const existing = await findBillingIntegration(db, ctx.organizationUid);
  const [row] = await db
    .insert(billingIntegrations)
    .values({
      organizationUid: ctx.organizationUid,
      type: body.type,
      url: url.toString(),
      secret: body.secret,
    })
    .onConflictDoUpdate({
      target: billingIntegrations.organizationUid,
      set: { type: body.type, url: url.toString(), secret: body.secret, updatedAt: sql`now()` },
    })
    .returning();
  return { created: !existing, integration: toIntegrationView(row!) };
}

export async function getBillingIntegration(db: Db, ctx: RequestContext) {
  requireAdmin(ctx);
  const row = await findBillingIntegration(db, ctx.organizationUid);
  if (!row) throw notFound('Billing integration');
  return toIntegrationView(row);
}

export async function removeBillingIntegration(db: Db, ctx: RequestContext) {
  requireAdmin(ctx);
  const [row] = await db
    .delete(billingIntegrations)
    .where(eq(billingIntegrations.organizationUid, ctx.organizationUid))
    .returning();
  if (!row) throw notFound('Billing integration');
  return toIntegrationView(row);
}

/**
 * The revision the next sync of an invoice is sent under: above the invoice's own revision and above
 * every revision an earlier attempt already used. An attempt that rolled back (partner error, timeout,
 * failed commit) leaves its intent behind, so its key `uid:revision` — which the partner may have
 * stored with a body we never committed — is never sent again with different content.
 */
async function nextSyncRevision(tx: DbOrTx, invoice: InvoiceRow): Promise<number> {
  const [used] = await tx
    .select({ max: sql<number | null>`max(${billingSyncIntents.revision})` })
    .from(billingSyncIntents)
    .where(
      and(
        eq(billingSyncIntents.organizationUid, invoice.organizationUid),
        eq(billingSyncIntents.invoiceUid, invoice.uid),
      ),
    );
  return Math.max(invoice.revision, Number(used?.max ?? 0)) + 1;
}

/**
 * Committed on its own, before the partner is called (see the reconciler). The invoice row is locked
 * while the revision is chosen, so two updates of one invoice never reserve the same revision.
 */
export async function recordSyncIntent(db: Db, invoice: InvoiceRow): Promise<SyncIntent> {
  return db.transaction(async (tx) => {
    const [locked] = await tx
      .select()
      .from(invoices)
      .where(and(eq(invoices.organizationUid, invoice.organizationUid), eq(invoices.uid, invoice.uid)))
      .for('update');
    const revision = await nextSyncRevision(tx, locked ?? invoice);
    const [row] = await tx
      .insert(billingSyncIntents)
      .values({
        organizationUid: invoice.organizationUid,
        invoiceUid: invoice.uid,
        revision,
        idempotencyKey: syncIdempotencyKey(invoice.uid, revision),
      })
      .returning();
    return row!;
  });
}

interface PartnerReply {
  reference?: unknown;
  id?: unknown;
}

async function callPartner(
  integration: BillingIntegration,
  invoice: { uid: string; revision: number },
  payload: unknown,
  idempotencyKey: string,
  options: BillingOptions,
) {
  const body = JSON.stringify(payload);
  try {
    const response = await sendOutbound(integration.url, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
        [SIGNATURE_HEADER]: signBody(integration.secret, body),
        'remit-organization': integration.organizationUid,
        'user-agent': 'Remit-Billing-Sync/1',
      },
      body,
      timeoutMs: options.timeoutMs,
      allowPrivate: options.allowPrivateNetworkTargets,
    });
    return response;
  } catch (error) {
    if (error instanceof OutboundError && error.kind === 'timeout') {
      throw new AppError(
        'gateway_timeout',
        `The billing partner did not answer within ${options.timeoutMs / 1000} s; nothing was changed`,
      );
    }
    if (error instanceof OutboundError && error.kind === 'blocked') {
      throw new PartnerNotCalled(
        `The billing endpoint was refused (${error.message}); nothing was sent or changed`,
      );
    }
    throw new AppError(
      'bad_gateway',
      `The billing partner could not be reached (${(error as Error).message}); nothing was changed`,
    );
  }
}

/** 502 raised before any byte left: the endpoint resolves to an address we must not reach. */
class PartnerNotCalled extends AppError {
  constructor(message: string) {
    super('bad_gateway', message);
  }
}

function referenceOf(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as PartnerReply;
    const ref = parsed.reference ?? parsed.id;
    return typeof ref === 'string' || typeof ref === 'number' ? String(ref).slice(0, 255) : null;
  } catch {
    return null;
  }
}

async function recordSynced(
  tx: DbOrTx,
  integration: BillingIntegration,
  invoiceUid: string,
  revision: number,
  responseBody: string,
  status: number,
) {
  await upsertIntegration(tx, {
    organizationUid: integration.organizationUid,
    entityUid: invoiceUid,
    integrationName: INTEGRATION_NAME,
    integrationUid: referenceOf(responseBody),
    integrationMetadata: {
      type: integration.type,
      revision,
      last_synced_at: new Date().toISOString(),
      last_status: status,
      endpoint_host: new URL(integration.url).host,
    },
  });
}

export function syncPayload(invoice: unknown, revision: number) {
  return { event: 'invoice.updated', revision, invoice };
}

/**
 * Sends the updated invoice inside the update's transaction, before it commits, under the revision the
 * intent reserved (the row takes that revision). A partner error is 502, no answer within the timeout
 * 504; either way the caller's transaction rolls back. Returns the row as it will be committed.
 */
export async function syncInTransaction(
  tx: DbOrTx,
  integration: BillingIntegration,
  updated: InvoiceRow,
  intent: SyncIntent,
  options: BillingOptions,
  loadView: (tx: DbOrTx, row: InvoiceRow) => Promise<{ uid: string; revision: number }>,
): Promise<InvoiceRow> {
  let row = updated;
  if (row.revision !== intent.revision) {
    [row] = (await tx
      .update(invoices)
      .set({ revision: intent.revision })
      .where(and(eq(invoices.organizationUid, row.organizationUid), eq(invoices.uid, row.uid)))
      .returning()) as [InvoiceRow];
  }
  const view = await loadView(tx, row);
  const response = await callPartner(
    integration,
    view,
    syncPayload(view, intent.revision),
    intent.idempotencyKey,
    options,
  );
  if (response.status < 200 || response.status >= 300) {
    throw new AppError(
      'bad_gateway',
      `The billing partner refused the update (HTTP ${response.status}); nothing was changed`,
    );
  }
  await recordSynced(tx, integration, view.uid, intent.revision, response.body, response.status);
  await tx
    .update(billingSyncIntents)
    .set({ state: 'confirmed', attempts: sql`${billingSyncIntents.attempts} + 1`, updatedAt: sql`now()` })
    .where(
      and(
        eq(billingSyncIntents.organizationUid, intent.organizationUid),
        eq(billingSyncIntents.uid, intent.uid),
      ),
    );
  return row;
}

/**
 * After a rolled-back update: note the error on the intent. An error raised before the partner was
 * called — a client error (422 validation, 409 conflict) or an endpoint refused by the private-network
 * rule — leaves nothing to repair, so that intent is abandoned. Anything else (502, 504, a failed
 * commit) may have reached the partner: the intent stays pending and the reconciler re-sends the
 * committed state.
 */
export async function noteSyncFailure(db: Db, intent: SyncIntent, error: unknown): Promise<void> {
  const neverSent =
    error instanceof PartnerNotCalled || (error instanceof AppError && error.statusCode < 500);
  await noteAttemptFailure(db, intent, error, neverSent);
}

async function noteAttemptFailure(db: Db, intent: SyncIntent, error: unknown, abandon: boolean) {
  await db
    .update(billingSyncIntents)
    .set({
      ...(abandon ? { state: 'abandoned' as const } : {}),
      attempts: sql`${billingSyncIntents.attempts} + 1`,
      lastError: String((error as Error).message ?? error).slice(0, 1000),
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(billingSyncIntents.organizationUid, intent.organizationUid),
        eq(billingSyncIntents.uid, intent.uid),
        eq(billingSyncIntents.state, 'pending'),
      ),
    );
}

export interface ReconcileResult {
  /** Pending intents looked at (several of one invoice are repaired by one send). */
  checked: number;
  /** Invoices whose committed state the partner accepted. */
  resent: number;
  /** Invoices whose send failed; their intents stay pending with `attempts` and `last_error`. */
  failed: number;
  /** Invoices (or integrations) deleted since: their intents are abandoned. */
  abandoned: number;
}

/**
 * Repairs "partner accepted, our commit failed" (and timeouts whose outcome is unknown): for every
 * intent still pending after `olderThanSeconds`, the invoice's committed state is sent again under a
 * fresh revision (so the partner cannot answer from its idempotency cache), until the partner accepts.
 */
export async function reconcileBillingSyncs(
  db: Db,
  loadView: (tx: DbOrTx, row: InvoiceRow) => Promise<{ uid: string; revision: number }>,
  options: BillingOptions & { olderThanSeconds: number; limit?: number },
): Promise<ReconcileResult> {
  const pending = await db
    .select()
    .from(billingSyncIntents)
    .where(
      and(
        eq(billingSyncIntents.state, 'pending'),
        lt(billingSyncIntents.createdAt, sql`now() - make_interval(secs => ${options.olderThanSeconds})`),
      ),
    )
    .orderBy(billingSyncIntents.createdAt)
    .limit(options.limit ?? 50);
  const result: ReconcileResult = { checked: pending.length, resent: 0, failed: 0, abandoned: 0 };
  const done = new Set<string>();
  for (const intent of pending) {
    if (done.has(intent.invoiceUid)) continue;
    done.add(intent.invoiceUid);
    let outcome = 'resent' as 'resent' | 'abandoned' | 'skipped';
    let attempted: number | undefined;
    try {
      await db.transaction(async (tx) => {
        const integration = await findBillingIntegration(tx, intent.organizationUid);
        const [invoice] = await tx
          .select()
          .from(invoices)
          .where(
            and(eq(invoices.organizationUid, intent.organizationUid), eq(invoices.uid, intent.invoiceUid)),
          )
          .for('update');
        if (!integration || !invoice) {
          await tx
            .update(billingSyncIntents)
            .set({
              state: 'abandoned',
              updatedAt: sql`now()`,
              lastError: 'integration or invoice no longer exists',
            })
            .where(
              and(
                eq(billingSyncIntents.organizationUid, intent.organizationUid),
                eq(billingSyncIntents.invoiceUid, intent.invoiceUid),
                eq(billingSyncIntents.state, 'pending'),
              ),
            );
          outcome = 'abandoned';
          return;
        }
        // Another reconciler run may have repaired this invoice while we waited for the lock.
        const [still] = await tx
          .select({ uid: billingSyncIntents.uid })
          .from(billingSyncIntents)
          .where(
            and(
              eq(billingSyncIntents.organizationUid, intent.organizationUid),
              eq(billingSyncIntents.uid, intent.uid),
              eq(billingSyncIntents.state, 'pending'),
            ),
          );
        if (!still) {
          outcome = 'skipped';
          return;
        }
        const revision = await nextSyncRevision(tx, invoice);
        attempted = revision;
        const [bumped] = await tx
          .update(invoices)
          .set({ revision })
          .where(and(eq(invoices.organizationUid, invoice.organizationUid), eq(invoices.uid, invoice.uid)))
          .returning();
        const view = await loadView(tx, bumped!);
        const response = await callPartner(
          integration,
          view,
          syncPayload(view, revision),
          syncIdempotencyKey(invoice.uid, revision),
          options,
        );
        if (response.status < 200 || response.status >= 300)
          throw new Error(`partner answered HTTP ${response.status}`);
        await recordSynced(tx, integration, invoice.uid, revision, response.body, response.status);
        await tx
          .update(billingSyncIntents)
          .set({ state: 'confirmed', updatedAt: sql`now()`, lastError: null })
          .where(
            and(
              eq(billingSyncIntents.organizationUid, intent.organizationUid),
              eq(billingSyncIntents.invoiceUid, intent.invoiceUid),
              eq(billingSyncIntents.state, 'pending'),
              lte(billingSyncIntents.revision, revision),
            ),
          );
      });
      if (outcome !== 'skipped') result[outcome] += 1;
    } catch (error) {
      result.failed += 1;
      // Never abandoned here: an earlier attempt may have reached the partner, which still differs.
      await noteAttemptFailure(db, intent, error, false);
      // The attempt rolled back, but the partner may have stored its key with the body we sent: burn
      // that revision so the next attempt (whose body may differ: comments, days overdue) uses a new key.
      if (attempted !== undefined) {
        await db
          .update(invoices)
          .set({ revision: sql`greatest(${invoices.revision}, ${attempted})` })
          .where(
            and(eq(invoices.organizationUid, intent.organizationUid), eq(invoices.uid, intent.invoiceUid)),
          );
      }
    }
  }
  return result;
}
