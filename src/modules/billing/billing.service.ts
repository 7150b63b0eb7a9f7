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

/** Committed on its own, before the partner is called (see the reconciler). */
export async function recordSyncIntent(db: Db, invoice: InvoiceRow, revision: number): Promise<SyncIntent> {
  const [row] = await db
    .insert(billingSyncIntents)
    .values({
      organizationUid: invoice.organizationUid,
      invoiceUid: invoice.uid,
      revision,
      idempotencyKey: syncIdempotencyKey(invoice.uid, revision),
    })
    .returning();
  return row!;
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
    throw new AppError(
      'bad_gateway',
      `The billing partner could not be reached (${(error as Error).message}); nothing was changed`,
    );
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
 * Sends the updated invoice inside the update's transaction, before it commits. A partner error is
 * 502, no answer within the timeout 504; either way the caller's transaction rolls back.
 */
export async function syncInTransaction(
  tx: DbOrTx,
  integration: BillingIntegration,
  view: { uid: string; revision: number },
  intent: SyncIntent,
  options: BillingOptions,
): Promise<void> {
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
}

/** After a rolled-back update: note the error on the intent (the reconciler decides what to re-send). */
export async function noteSyncFailure(db: Db, intent: SyncIntent, error: unknown): Promise<void> {
  await db
    .update(billingSyncIntents)
    .set({
      attempts: sql`${billingSyncIntents.attempts} + 1`,
      lastError: String((error as Error).message ?? error),
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(billingSyncIntents.organizationUid, intent.organizationUid),
        eq(billingSyncIntents.uid, intent.uid),
      ),
    );
}

export interface ReconcileResult {
  checked: number;
  resent: number;
  failed: number;
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
  const result: ReconcileResult = { checked: pending.length, resent: 0, failed: 0 };
  const done = new Set<string>();
  for (const intent of pending) {
    if (done.has(intent.invoiceUid)) continue;
    done.add(intent.invoiceUid);
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
          return;
        }
        const revision = Math.max(invoice.revision, intent.revision) + 1;
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
      result.resent += 1;
    } catch (error) {
      result.failed += 1;
      await noteSyncFailure(db, intent, error);
    }
  }
  return result;
}
