import type { Db } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { notFound } from '../../platform/http/errors.ts';
import * as credits from './credits.repository.ts';
import { assertMayCorrectMoney } from './invoice-money.ts';
import * as repo from './invoices.repository.ts';
import { getInvoiceRow } from './invoices.service.ts';

/**
 * What the invoice routes that take a body check before it (`config.exists`, run when the body fails
 * validation): the invoice, as the caller may see it (else 404), and what the path names inside it.
 * The same checks the handlers make first, without the body, so a bad body to another organization's
 * invoice answers 404 as a good one does.
 */
export async function invoiceExists(db: Db, ctx: RequestContext, uid: string): Promise<void> {
  await getInvoiceRow(db, ctx, uid);
}

export async function commentExists(
  db: Db,
  ctx: RequestContext,
  uid: string,
  commentUid: string,
): Promise<void> {
  const row = await getInvoiceRow(db, ctx, uid);
  if (!(await repo.findComment(db, row.organizationUid, row.uid, commentUid))) throw notFound('Comment');
}

/** Credit notes, refunds and voids: an admin of the invoice's organization (403), then what they name. */
export async function moneyTargetExists(
  db: Db,
  ctx: RequestContext,
  uid: string,
  target: { paymentUid?: string | undefined; creditNoteUid?: string | undefined } = {},
): Promise<void> {
  assertMayCorrectMoney(ctx);
  const row = await getInvoiceRow(db, ctx, uid);
  assertMayCorrectMoney(ctx, row.organizationUid);
  if (
    target.paymentUid &&
    !(await credits.findPayment(db, row.organizationUid, row.uid, target.paymentUid))
  ) {
    throw notFound('Payment');
  }
  if (
    target.creditNoteUid &&
    !(await credits.findCreditNote(db, row.organizationUid, row.uid, target.creditNoteUid))
  ) {
    throw notFound('Credit note');
  }
}
