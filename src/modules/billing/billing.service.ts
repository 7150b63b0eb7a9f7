import crypto from 'node:crypto';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { isSealed, type SecretBox } from '../../platform/secrets/secret-box.ts';
import type { Metrics } from '../../platform/observability/metrics.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { assertPublicTarget, OutboundError, sendOutbound } from '../../platform/http/outbound.ts';
import { requireAdmin, type RequestContext } from '../../platform/http/context.ts';
import type { AppDeps } from '../../platform/http/types.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import {
  findInvoiceView,
  recordInvoiceIntegration,
  setInvoiceRevision,
  type InvoiceRow,
} from '../invoices/invoice-integrations.service.ts';
import * as repo from './billing.repository.ts';
import { changesBetween, recordAuditEvent, recordUpdate } from '../audit/audit.service.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';

export type BillingIntegration = repo.BillingIntegrationRow;
export type SyncIntent = repo.SyncIntentRow;

export interface BillingOptions {
  allowPrivateNetworkTargets: boolean;
  timeoutMs: number;
  /** Opens the integration's signing secret, sealed at rest. */
  secrets: SecretBox;
  /** Times each partner call (docs/observability.md). */
  metrics?: Metrics | undefined;
}

/** The billing options of the running app (its configuration and secret box). */
export function billingOptionsOf(deps: AppDeps): BillingOptions {
  return {
    allowPrivateNetworkTargets: deps.config.allowPrivateNetworkTargets,
    timeoutMs: deps.config.billingTimeoutMs,
    secrets: deps.secrets,
    metrics: deps.metrics,
  };
}

/** What an organization's sealed billing secret is bound to. */
export const billingSecretPurpose = (organizationUid: string) =>
  `billing_integrations.secret:${organizationUid}`;

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
  return repo.findIntegration(db, organizationUid);
}

export async function configureBillingIntegration(
  db: Db,
  ctx: RequestContext,
  body: { type: 'http'; url: string; secret: string },
  options: BillingOptions,
): Promise<{ created: boolean; integration: ReturnType<typeof toIntegrationView> }> {
  requireAdmin(ctx);
  const url = await assertPublicTarget(body.url, options.allowPrivateNetworkTargets);
  const purpose = billingSecretPurpose(ctx.organizationUid);
  const secret = options.secrets.seal(body.secret, purpose);
  return db.transaction(async (tx) => {
    const existing = await findBillingIntegration(tx, ctx.organizationUid);
    const row = await repo.upsertIntegration(tx, ctx.organizationUid, {
      type: body.type,
      url: url.toString(),
      secret,
    });
    // The event compares the secrets themselves (each seal differs), so a new secret shows as changed
    // and the same one does not; either way it is written only as "[redacted]".
    const state = (r: BillingIntegration, plaintext: string) => ({
      type: r.type,
      url: r.url,
      secret: plaintext,
    });
    const after = state(row, body.secret);
    if (!existing) {
      await recordAuditEvent(tx, ctx, {
        organizationUid: ctx.organizationUid,
        action: 'billing_integration.created',
        entityUid: ctx.organizationUid,
        changes: changesBetween(null, after),
      });
    } else {
      await recordUpdate(tx, ctx, {
        organizationUid: ctx.organizationUid,
        action: 'billing_integration.updated',
        entityUid: ctx.organizationUid,
        before: state(existing, storedPlaintext(options.secrets, existing.secret, purpose)),
        after,
      });
    }
    return { created: !existing, integration: toIntegrationView(row) };
  });
}

/**
 * The stored secret's plaintext, to tell a new secret from the same one again; a value that cannot be
 * opened (stored before encryption at rest, or under a key no longer configured) counts as different.
 */
function storedPlaintext(secrets: SecretBox, stored: string, purpose: string): string {
  if (!isSealed(stored)) return stored;
  try {
    return secrets.open(stored, purpose);
  } catch {
    return stored;
  }
}

export async function getBillingIntegration(db: Db, ctx: RequestContext) {
  requireAdmin(ctx);
  const row = await findBillingIntegration(db, ctx.organizationUid);
  if (!row) throw notFound('Billing integration');
  return toIntegrationView(row);
}

export async function removeBillingIntegration(db: Db, ctx: RequestContext) {
  requireAdmin(ctx);
  return db.transaction(async (tx) => {
    const row = await repo.deleteIntegration(tx, ctx.organizationUid);
    if (!row) throw notFound('Billing integration');
    await recordAuditEvent(tx, ctx, {
      organizationUid: ctx.organizationUid,
      action: 'billing_integration.deleted',
      entityUid: ctx.organizationUid,
      changes: changesBetween({ type: row.type, url: row.url, secret: row.secret }, null),
    });
    return toIntegrationView(row);
  });
}

/**
 * The revision the next sync of an invoice is sent under: above the invoice's own revision and above
 * every revision an earlier attempt already used. An attempt that rolled back (partner error, timeout,
 * failed commit) leaves its intent behind, so its key `uid:revision` — which the partner may have
 * stored with a body we never committed — is never sent again with different content.
 */
async function nextSyncRevision(tx: DbOrTx, invoice: InvoiceRow): Promise<number> {
  const used = await repo.maxIntentRevision(tx, invoice.organizationUid, invoice.uid);
  return Math.max(invoice.revision, used) + 1;
}

/**
 * How long an `in_progress` intent may wait for its answer and its apply. Past this its process is
 * taken to have stopped (kill -9 between the partner call and the apply): the intent no longer blocks
 * updates and the reconciler re-sends the committed state.
 */
export function staleAfterSeconds(options: Pick<BillingOptions, 'timeoutMs'>): number {
  return Math.ceil(options.timeoutMs / 1000) + 30;
}

/**
 * In the caller's short transaction, with the invoice row locked: refuses (409 `sync_in_progress`)
 * while another update of this invoice is with the partner, releases intents left in progress by a
 * stopped process, and returns the revision the next sync is sent under.
 */
export async function reserveSyncRevision(
  tx: DbOrTx,
  invoice: InvoiceRow,
  options: Pick<BillingOptions, 'timeoutMs'>,
): Promise<number> {
  const staleS = staleAfterSeconds(options);
  await repo.releaseStaleIntentsOfInvoice(tx, invoice.organizationUid, invoice.uid, staleS);
  const busy = await repo.findIntentInProgress(tx, invoice.organizationUid, invoice.uid);
  if (busy) {
    throw new AppError(
      'sync_in_progress',
      'Another update of this invoice is being sent to the billing partner; retry in a moment',
    );
  }
  return nextSyncRevision(tx, invoice);
}

/** The intent of an update about to be sent: `in_progress`, committed before the partner is called. */
export async function openSyncIntent(tx: DbOrTx, invoice: InvoiceRow, revision: number): Promise<SyncIntent> {
  return repo.insertIntent(tx, invoice.organizationUid, {
    invoiceUid: invoice.uid,
    revision,
    idempotencyKey: syncIdempotencyKey(invoice.uid, revision),
    state: 'in_progress',
    baseRevision: invoice.revision,
  });
}

/** Locks the invoice row, reserves the next revision and opens its intent, in one short transaction. */
export async function recordSyncIntent(
  db: Db,
  invoice: InvoiceRow,
  options: Pick<BillingOptions, 'timeoutMs'>,
): Promise<SyncIntent> {
  return db.transaction(async (tx) => {
    const locked = await repo.lockInvoice(tx, invoice.organizationUid, invoice.uid);
    const current = locked ?? invoice;
    return openSyncIntent(tx, current, await reserveSyncRevision(tx, current, options));
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
  const secret = options.secrets.open(integration.secret, billingSecretPurpose(integration.organizationUid));
  try {
    const response = await sendOutbound(integration.url, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
        [SIGNATURE_HEADER]: signBody(secret, body),
        'remit-organization': integration.organizationUid,
        'user-agent': 'Remit-Billing-Sync/1',
      },
      body,
      timeoutMs: options.timeoutMs,
      allowPrivate: options.allowPrivateNetworkTargets,
      metrics: options.metrics,
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
  await recordInvoiceIntegration(tx, {
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
 * Sends an invoice view to the partner under the intent's key, outside any transaction. A refusal is
 * 502, no answer within the timeout 504 (either may have reached the partner: the intent goes back to
 * `pending`), an endpoint refused by the private-network rule 502 before any byte left.
 */
export async function sendSync(
  integration: BillingIntegration,
  view: { uid: string; revision: number },
  intent: Pick<SyncIntent, 'revision' | 'idempotencyKey'>,
  options: BillingOptions,
): Promise<{ status: number; body: string }> {
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
  return response;
}

/** True while the intent is still the one in progress (not released as stale by someone else). */
export async function isStillInProgress(tx: DbOrTx, intent: SyncIntent): Promise<boolean> {
  return (await repo.findIntentState(tx, intent.organizationUid, intent.uid)) === 'in_progress';
}

/**
 * In the apply's transaction: records the partner's answer, confirms this intent and every earlier
 * unconfirmed one of the invoice (the partner now holds a later committed state than any of them).
 */
export async function confirmSync(
  tx: DbOrTx,
  integration: BillingIntegration,
  intent: SyncIntent,
  response: { status: number; body: string },
): Promise<void> {
  await recordSynced(tx, integration, intent.invoiceUid, intent.revision, response.body, response.status);
  await repo.confirmIntents(tx, intent.organizationUid, intent.invoiceUid, intent);
}

/**
 * After a failed update: note the error on the intent. A failure before the partner was called — the
 * endpoint refused by the private-network rule — leaves nothing to repair: the intent is abandoned.
 * Anything else (a refusal, a timeout, an apply that could not commit) may have reached the partner:
 * the intent becomes `pending`, and the reconciler re-sends the committed state.
 */
export async function noteSyncFailure(db: Db, jobs: Jobs, intent: SyncIntent, error: unknown): Promise<void> {
  await noteAttemptFailure(db, jobs, intent, error, error instanceof PartnerNotCalled);
}

/**
 * The failure noted on the intent and, in the same transaction, `invoice.sync_failed`: on a sync's
 * first failed attempt and when it is abandoned, not on each of the reconciler's retries (one a
 * minute while a partner is down), whose end `invoice.synced` reports.
 */
async function noteAttemptFailure(db: Db, jobs: Jobs, intent: SyncIntent, error: unknown, abandon: boolean) {
  const message = String((error as Error).message ?? error).slice(0, 1000);
  await db.transaction(async (tx) => {
    const noted = await repo.noteIntentFailure(tx, intent.organizationUid, intent.uid, {
      state: abandon ? 'abandoned' : 'pending',
      lastError: message,
    });
    if (!noted || (noted.attempts > 1 && noted.state !== 'abandoned')) return;
    const invoice = await findInvoiceView(tx, noted.organizationUid, noted.invoiceUid);
    if (!invoice) return;
    await emitEvent(
      tx,
      jobs,
      { organizationUid: noted.organizationUid },
      'invoice.sync_failed',
      { type: 'invoice', uid: noted.invoiceUid },
      { invoice, revision: noted.revision, error: message, will_retry: noted.state === 'pending' },
    );
  });
}

/**
 * `invoice.synced`, in the transaction that confirms the sync (`confirmSync`) and after the invoice's
 * own events: `invoice` is the committed invoice the partner now holds, with its billing record.
 */
export async function emitSynced(
  tx: DbOrTx,
  jobs: Jobs,
  intent: Pick<SyncIntent, 'organizationUid' | 'invoiceUid' | 'revision'>,
  invoice: { uid: string },
  resent = false,
): Promise<void> {
  await emitEvent(
    tx,
    jobs,
    { organizationUid: intent.organizationUid },
    'invoice.synced',
    { type: 'invoice', uid: intent.invoiceUid },
    { invoice, revision: intent.revision, resent },
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
 * Repairs "partner accepted, our apply did not commit" (a crash, a timeout whose outcome is unknown, an
 * invoice changed during the call): for every intent still pending after `olderThanSeconds` — and every
 * one left `in_progress` by a stopped process — the invoice's committed state is sent again under a
 * fresh revision (so the partner cannot answer from its idempotency cache), until the partner accepts.
 * Like an update, it holds no transaction across the call: claim (short), send, apply (short).
 */
export async function reconcileBillingSyncs(
  db: Db,
  jobs: Jobs,
  loadView: (tx: DbOrTx, row: InvoiceRow) => Promise<{ uid: string; revision: number }>,
  options: BillingOptions & { olderThanSeconds: number; limit?: number },
): Promise<ReconcileResult> {
  // Across every organization: the reconciler is the one caller that works on all of them.
  await repo.releaseStaleIntentsOfAllOrganizations(db, staleAfterSeconds(options));
  const pending = await repo.listPendingIntentsOfAllOrganizations(
    db,
    options.olderThanSeconds,
    options.limit ?? 50,
  );
  const result: ReconcileResult = { checked: pending.length, resent: 0, failed: 0, abandoned: 0 };
  const done = new Set<string>();
  for (const intent of pending) {
    if (done.has(intent.invoiceUid)) continue;
    done.add(intent.invoiceUid);
    const claim = await claimForResend(db, intent, loadView, options);
    if (claim.kind === 'abandoned') result.abandoned += 1;
    if (claim.kind !== 'claimed') continue;
    try {
      const response = await sendSync(claim.integration, claim.view, claim.intent, options);
      const applied = await db.transaction(async (tx) => {
        const invoice = await repo.lockInvoice(tx, intent.organizationUid, intent.invoiceUid);
        if (
          !invoice ||
          invoice.revision !== claim.intent.baseRevision ||
          !(await isStillInProgress(tx, claim.intent))
        )
          return false;
        // Only the revision: the rest of the row is what was sent (and updated_at stays as sent).
        await setInvoiceRevision(tx, invoice.organizationUid, invoice.uid, claim.intent.revision);
        await confirmSync(tx, claim.integration, claim.intent, response);
        const synced = await loadView(tx, { ...invoice, revision: claim.intent.revision });
        await emitSynced(tx, jobs, claim.intent, synced, true);
        return true;
      });
      if (!applied) throw new Error('the invoice changed while its committed state was being re-sent');
      result.resent += 1;
    } catch (error) {
      result.failed += 1;
      // Back to pending, never abandoned here: this attempt may have reached the partner. Its revision
      // stays on the intent, so the next attempt (whose body may differ) uses a new key.
      await noteAttemptFailure(db, jobs, claim.intent, error, false);
    }
  }
  return result;
}

type ResendClaim =
  | {
      kind: 'claimed';
      integration: BillingIntegration;
      intent: SyncIntent;
      view: { uid: string; revision: number };
    }
  | { kind: 'abandoned' }
  | { kind: 'skipped' };

/**
 * Short transaction: the pending intent becomes `in_progress` under a fresh revision, with the view of
 * the committed invoice to send; an invoice or integration that is gone abandons the invoice's intents;
 * an update already in progress (or another reconciler) is left alone.
 */
async function claimForResend(
  db: Db,
  intent: SyncIntent,
  loadView: (tx: DbOrTx, row: InvoiceRow) => Promise<{ uid: string; revision: number }>,
  options: BillingOptions,
): Promise<ResendClaim> {
  return db.transaction(async (tx): Promise<ResendClaim> => {
    const integration = await findBillingIntegration(tx, intent.organizationUid);
    const invoice = await repo.lockInvoice(tx, intent.organizationUid, intent.invoiceUid);
    if (!integration || !invoice) {
      await repo.abandonIntentsOfInvoice(
        tx,
        intent.organizationUid,
        intent.invoiceUid,
        'integration or invoice no longer exists',
      );
      return { kind: 'abandoned' };
    }
    let revision: number;
    try {
      revision = await reserveSyncRevision(tx, invoice, options);
    } catch (error) {
      if (error instanceof AppError && error.code === 'sync_in_progress') return { kind: 'skipped' };
      throw error;
    }
    const claimed = await repo.claimPendingIntent(tx, intent.organizationUid, intent.uid, {
      revision,
      idempotencyKey: syncIdempotencyKey(invoice.uid, revision),
      baseRevision: invoice.revision,
    });
    // Repaired meanwhile by another reconciler run (or an update that confirmed it).
    if (!claimed) return { kind: 'skipped' };
    return {
      kind: 'claimed',
      integration,
      intent: claimed,
      view: await loadView(tx, { ...invoice, revision }),
    };
  });
}

/**
 * Seals every billing secret that is plaintext (written before encryption at rest) or sealed under a
 * key that is no longer the current one. Returns how many were sealed again.
 */
export async function resealBillingSecrets(db: Db, secrets: SecretBox): Promise<number> {
  // Every organization's: resealing is an operator's command over the whole installation.
  const rows = await repo.listIntegrationSecretsOfAllOrganizations(db);
  let count = 0;
  for (const row of rows) {
    const sealed = secrets.resealed(row.secret, billingSecretPurpose(row.organizationUid));
    if (sealed === undefined) continue;
    count += await repo.replaceIntegrationSecret(db, row.organizationUid, row.secret, sealed);
  }
  return count;
}
