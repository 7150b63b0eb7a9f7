import type { Readable } from 'node:stream';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { asService, runWithRole } from '../../platform/db/session-role.ts';
import { can, type CallOrigin, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound } from '../../platform/http/errors.ts';
import { SecretKeyError, type SecretBox } from '../../platform/secrets/secret-box.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { recordAuditEvent } from '../audit/audit.service.ts';
import { findPartiesByUids, toPartyView } from '../parties/parties.service.ts';
import { addressBucket, assertNotThrottled, recordFailure } from '../people/sign-in-throttle.ts';
import { hashSecretToken, newSecretToken } from '../people/secret-tokens.ts';
import { issuerDetails } from '../tenancy/organization-settings.service.ts';
import * as docs from './invoice-documents.repository.ts';
import { contentHash, type InvoiceDocument } from './invoice-pdf.ts';
import { renderInvoicePdfInThread } from './invoice-pdf-rendering.ts';
import { invoiceReader, visibleInvoices } from './invoice-access.ts';
import * as repo from './invoices.repository.ts';

/**
 * Invoice documents (docs/invoices.md#invoice-documents): the PDF of a receivable invoice, rendered
 * once per content version and kept in object storage, and the hosted invoice page behind a revocable
 * link that needs no key.
 */
export interface InvoiceDocumentDeps {
  db: Db;
  storage: ObjectStorage;
  /** Seals the hosted links' tokens, so the live link can be shown again. */
  secrets: SecretBox;
  /** PUBLIC_BASE_URL: where the hosted pages are (`<base>/i/<token>`). */
  publicBaseUrl: string;
}

/** The sealed tokens' purpose (bound into the seal: a token sealed for anything else does not open). */
const SEAL_PURPOSE = 'hosted invoice link';

// ---- what the PDF shows ----

const iso = (value: Date | string | null) =>
  value === null ? null : (typeof value === 'string' ? new Date(value) : value).toISOString();

/** The document of a receivable: the invoice's own values, its client party and its issuer's details. */
async function documentOf(db: DbOrTx, row: repo.InvoiceRow): Promise<InvoiceDocument> {
  const issuer = await issuerDetails(db, row.organizationUid);
  const lines = await repo.listLineItems(db, row.organizationUid, [row.uid]);
  const [party] = row.clientPartyUid
    ? await findPartiesByUids(db, row.organizationUid, [row.clientPartyUid])
    : [];
  const client = party ? toPartyView(party) : undefined;
  return {
    issuer: {
      name: issuer.name,
      address: issuer.address,
      tax_id: issuer.taxId,
      payment_instructions: issuer.paymentInstructions,
    },
    client: client
      ? {
          name: client.name,
          address: client.address,
          tax_id: client.tax_id,
          email: client.billing_contact?.email ?? null,
        }
      : null,
    invoice_number: row.invoiceNumber,
    status: row.status,
    currency: row.currency,
    issue_date: iso(row.issueDate),
    due_date: iso(row.dueDate),
    paid_date: iso(row.paidDate),
    lines: lines.map((l) => ({
      kind: l.contextType,
      description: l.contextName,
      sku: l.sku,
      quantity: l.quantity,
      unit_price_cents: l.unitPrice,
      line_total_cents: l.lineTotal,
    })),
    subtotal_cents: row.subtotalCents,
    discount_cents: row.discountCents,
    tax_cents: row.taxCents,
    total_cents: row.totalCents,
    credit_notes_cents: row.prePaymentCreditNotesCents,
    amount_due_cents: row.amountDueCents,
    amount_paid_cents: row.amountPaidCents,
    amount_remaining_cents: row.amountRemainingCents,
    memo: row.invoiceMemo,
    footer: row.invoiceFooter,
  };
}

function requireReceivable(row: { invoiceType: string }): void {
  if (row.invoiceType !== 'ACCOUNTS_RECEIVABLE') {
    throw new AppError(
      'invalid_state',
      "Invoice documents are for receivable invoices: a payable is the vendor's document (attach it instead)",
    );
  }
}

/** A receivable the caller may read (the one visibility rule: invoice-access.ts), or 404 / 409. */
async function readableReceivable(db: Db, ctx: RequestContext, uid: string): Promise<repo.InvoiceRow> {
  const row = await repo.findInvoice(db, visibleInvoices(db, invoiceReader(ctx.principal)), uid);
  if (!row) throw notFound('Invoice');
  requireReceivable(row);
  return row;
}

// ---- the PDF and its cache ----

export interface InvoicePdf {
  /** The content version, served as the strong ETag. */
  contentHash: string;
  size: number;
  /** Null when the caller's `If-None-Match` already names this version (answer 304). */
  body: Readable | Buffer | null;
  filename: string;
}

const storageKeyOf = (organizationUid: string, invoiceUid: string, hash: string) =>
  `invoice-documents/${organizationUid}/${invoiceUid}/${hash}.pdf`;

const filenameOf = (invoiceNumber: string) =>
  `invoice-${invoiceNumber.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100) || 'document'}.pdf`;

/** Whether an `If-None-Match` header names this ETag (or `*`). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim().replace(/^W\//, '');
    return t === '*' || t === etag;
  });
}

export const etagOf = (hash: string) => `"${hash}"`;

/**
 * The invoice's PDF for its current content: the stored rendering when its content hash is the current
 * one, else a new rendering, stored (object first, then the row; the object it replaces is removed
 * once the row points elsewhere). Nothing is rendered or read from storage for a matching ETag.
 */
async function pdfOf(
  deps: InvoiceDocumentDeps,
  row: repo.InvoiceRow,
  ifNoneMatch: string | undefined,
): Promise<InvoicePdf> {
  const document = await documentOf(deps.db, row);
  const hash = contentHash(document);
  const filename = filenameOf(row.invoiceNumber);
  const cached = await docs.findDocument(deps.db, row.organizationUid, row.uid);
  if (cached?.contentHash === hash) {
    if (matches(ifNoneMatch, etagOf(hash)))
      return { contentHash: hash, size: cached.byteSize, body: null, filename };
    const stored = await deps.storage.getObject(cached.storageKey);
    if (stored) return { contentHash: hash, size: stored.size, body: stored.body, filename };
  } else if (matches(ifNoneMatch, etagOf(hash))) {
    // The client holds this version already (rendered here before, then replaced and back again).
    return { contentHash: hash, size: 0, body: null, filename };
  }
  const bytes = await renderInvoicePdfInThread(document);
  const key = storageKeyOf(row.organizationUid, row.uid, hash);
  await deps.storage.putObject(key, bytes, { contentType: 'application/pdf', contentLength: bytes.length });
  const replaced = await deps.db.transaction((tx) =>
    docs.saveDocument(tx, {
      organizationUid: row.organizationUid,
      invoiceUid: row.uid,
      contentHash: hash,
      storageKey: key,
      byteSize: bytes.length,
    }),
  );
  // Best effort: an object left behind costs space, not correctness (nothing points to it).
  if (replaced) await deps.storage.deleteObject(replaced).catch(() => undefined);
  return { contentHash: hash, size: bytes.length, body: bytes, filename };
}

/** `GET /api/invoices/{uid}/pdf`: a receivable the caller may read (404 otherwise; 409 for a payable). */
export async function getInvoicePdf(
  deps: InvoiceDocumentDeps,
  ctx: RequestContext,
  uid: string,
  ifNoneMatch?: string,
): Promise<InvoicePdf> {
  const row = await readableReceivable(deps.db, ctx, uid);
  return pdfOf(deps, row, ifNoneMatch);
}

// ---- hosted links ----

export interface HostedLinkView {
  url: string;
  pdf_url: string;
  created_at: string;
  created_by_user_uid: string | null;
}

const hostedUrl = (deps: InvoiceDocumentDeps, token: string) => `${deps.publicBaseUrl}/i/${token}`;

function linkView(deps: InvoiceDocumentDeps, link: docs.HostedLinkRow): HostedLinkView {
  const url = hostedUrl(deps, deps.secrets.open(link.tokenSealed, SEAL_PURPOSE));
  return {
    url,
    pdf_url: `${url}/pdf`,
    created_at: link.createdAt.toISOString(),
    created_by_user_uid: link.createdByUserUid,
  };
}

function shownAgain(deps: InvoiceDocumentDeps, link: docs.HostedLinkRow): HostedLinkView | undefined {
  try {
    return linkView(deps, link);
  } catch (error) {
    if (error instanceof SecretKeyError) return undefined;
    throw error;
  }
}

const linkParent = (invoiceUid: string) => ({ type: 'invoice' as const, uid: invoiceUid });

/**
 * `POST /api/invoices/{uid}/hosted-link`: the invoice's live link, made when it has none (`created`
 * true). With `rotate`, the live link is revoked first and a new one made: the old address stops
 * working at once. Two concurrent first calls make one link (the unique index on the live link).
 */
export async function issueHostedLink(
  deps: InvoiceDocumentDeps,
  ctx: RequestContext,
  uid: string,
  options: { rotate?: boolean | undefined } = {},
): Promise<{ link: HostedLinkView; created: boolean }> {
  const row = await readableReceivable(deps.db, ctx, uid);
  const org = row.organizationUid;
  return deps.db.transaction(async (tx) => {
    if (options.rotate) {
      await revokeLive(tx, ctx, org, row.uid);
    } else {
      const live = await docs.findLiveLink(tx, org, row.uid);
      const shown = live && shownAgain(deps, live);
      if (shown) return { link: shown, created: false };
      // A live link whose seal no configured key opens (its key was dropped after a rotation) cannot
      // be shown again: it is revoked and replaced, and its address stops working.
      if (live) await revokeLive(tx, ctx, org, row.uid);
    }
    const { token, tokenHash } = newSecretToken();
    const inserted = await docs.insertLink(tx, {
      organizationUid: org,
      invoiceUid: row.uid,
      tokenHash,
      tokenSealed: deps.secrets.seal(token, SEAL_PURPOSE),
      createdByUserUid: ctx.principal.user.uid,
    });
    if (!inserted) {
      // Another call made the live link between our read and our insert: theirs is the link.
      const live = await docs.findLiveLink(tx, org, row.uid);
      if (!live) throw new AppError('conflict', 'The hosted link changed meanwhile; try again');
      return { link: linkView(deps, live), created: false };
    }
    await auditLink(tx, ctx, 'hosted_invoice_link.created', inserted);
    return { link: linkView(deps, inserted), created: true };
  });
}

/** `DELETE /api/invoices/{uid}/hosted-link`: the live link stops working; none live is no error. */
export async function revokeHostedLink(
  deps: InvoiceDocumentDeps,
  ctx: RequestContext,
  uid: string,
): Promise<{ revoked: boolean }> {
  const row = await readableReceivable(deps.db, ctx, uid);
  return deps.db.transaction(async (tx) => ({
    revoked: !!(await revokeLive(tx, ctx, row.organizationUid, row.uid)),
  }));
}

/** Revokes the invoice's live link, if any, with its audit event; the revoked link, or undefined. */
async function revokeLive(tx: DbOrTx, ctx: RequestContext, organizationUid: string, invoiceUid: string) {
  const revoked = await docs.revokeLiveLink(tx, organizationUid, invoiceUid, ctx.principal.user.uid);
  if (revoked) await auditLink(tx, ctx, 'hosted_invoice_link.revoked', revoked);
  return revoked;
}

async function auditLink(
  tx: DbOrTx,
  ctx: RequestContext,
  action: 'hosted_invoice_link.created' | 'hosted_invoice_link.revoked',
  link: docs.HostedLinkRow,
) {
  // Never the token, its hash or its seal: the address is the credential.
  await recordAuditEvent(tx, ctx, {
    organizationUid: link.organizationUid,
    action,
    entityUid: link.uid,
    parent: linkParent(link.invoiceUid),
    changes:
      action === 'hosted_invoice_link.created'
        ? { created_at: { before: null, after: link.createdAt.toISOString() } }
        : { revoked_at: { before: null, after: link.revokedAt?.toISOString() ?? null } },
  });
}

/**
 * The `{hosted_invoice_url}` email token: the live link's address, made when there is none and the
 * caller may make one (`invoices:write`). The reason otherwise, as a token problem.
 */
export async function hostedUrlForEmail(
  deps: InvoiceDocumentDeps,
  ctx: RequestContext,
  uid: string,
): Promise<{ value: string } | { problem: string }> {
  const row = await readableReceivable(deps.db, ctx, uid).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'invalid_state') return null;
    throw error;
  });
  if (!row) return { problem: 'A payable invoice has no hosted page' };
  const live = await docs.findLiveLink(deps.db, row.organizationUid, row.uid);
  const shown = live && shownAgain(deps, live);
  if (shown) return { value: shown.url };
  if (!can(ctx, 'invoices:write')) {
    return { problem: 'The invoice has no hosted link, and making one needs the invoices:write permission' };
  }
  return { value: (await issueHostedLink(deps, ctx, uid)).link.url };
}

// ---- the public page ----

/** A token as `newSecretToken` makes them; anything else is refused before any database work. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export interface HostedInvoice {
  document: InvoiceDocument;
  row: repo.InvoiceRow;
}

/**
 * The invoice a presented token names while its link is live, or null (unknown, malformed or revoked
 * alike: the page says nothing more). Throttled per client address like the other emailed links: a
 * run of bad tokens from one address blocks it for growing delays (429).
 */
async function presented(
  deps: InvoiceDocumentDeps,
  token: string,
  caller: CallOrigin & { ip: string },
): Promise<{ link: docs.HostedLinkRow; row: repo.InvoiceRow } | null> {
  const bucket = [addressBucket(caller.ip)];
  await assertNotThrottled(deps.db, bucket);
  // Found by the token's hash alone, across organizations: the one read that steps out of row-level
  // security, as an invitation's token does; everything after runs inside the link's organization.
  const link = TOKEN_SHAPE.test(token)
    ? await asService(() => docs.findLinkByTokenHash(deps.db, hashSecretToken(token)))
    : undefined;
  if (!link || link.revokedAt) {
    await recordFailure(deps.db, bucket);
    return null;
  }
  const role = { role: { kind: 'tenant' as const, organizationUids: [link.organizationUid] } };
  return runWithRole(role, async () => {
    const row = await repo.findInvoiceOfOrganization(deps.db, link.organizationUid, link.invoiceUid);
    if (!row || row.invoiceType !== 'ACCOUNTS_RECEIVABLE') return null;
    return { link, row };
  });
}

/** `GET /i/{token}`: what the hosted page shows, or null for the not-found page. */
export async function viewHostedInvoice(
  deps: InvoiceDocumentDeps,
  token: string,
  caller: CallOrigin & { ip: string },
): Promise<HostedInvoice | null> {
  const found = await presented(deps, token, caller);
  if (!found) return null;
  const role = { role: { kind: 'tenant' as const, organizationUids: [found.link.organizationUid] } };
  return runWithRole(role, async () => {
    await docs.touchLink(deps.db, found.link.organizationUid, found.link.uid);
    return { document: await documentOf(deps.db, found.row), row: found.row };
  });
}

/** `GET /i/{token}/pdf`: the same PDF as the API's, or null for the not-found page. */
export async function hostedInvoicePdf(
  deps: InvoiceDocumentDeps,
  token: string,
  caller: CallOrigin & { ip: string },
  ifNoneMatch?: string,
): Promise<InvoicePdf | null> {
  const found = await presented(deps, token, caller);
  if (!found) return null;
  const role = { role: { kind: 'tenant' as const, organizationUids: [found.link.organizationUid] } };
  return runWithRole(role, () => pdfOf(deps, found.row, ifNoneMatch));
}

// ---- the email token's access to the above ----

let emailDeps: InvoiceDocumentDeps | undefined;

/**
 * Hands the module's dependencies to the `{hosted_invoice_url}` email token, which is resolved by the
 * email module (and the collections agent through it) without them. Called when the module's routes
 * and jobs are registered (src/app.ts); every app of a process is built from the same secret keys and
 * public address.
 */
export function configureInvoiceDocuments(deps: InvoiceDocumentDeps): void {
  emailDeps = deps;
}

/** The email token's value for an invoice, or the problem (also when the module is not configured). */
export async function hostedInvoiceUrlToken(
  ctx: RequestContext,
  invoiceUid: string,
): Promise<{ value: string } | { problem: string }> {
  if (!emailDeps) return { problem: 'Hosted invoice pages are not available in this process' };
  return hostedUrlForEmail(emailDeps, ctx, invoiceUid);
}
