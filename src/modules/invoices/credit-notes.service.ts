import type { Db, DbOrTx } from '../../platform/db/client.ts';
import type { RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound, validationFailed } from '../../platform/http/errors.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import { changesBetween } from '../audit/audit.service.ts';
import { emitEvent } from '../webhooks/webhooks.service.ts';
import type { CreateCreditNoteBodyT, VoidCreditNoteBodyT } from './credit-notes.schemas.ts';
import * as repo from './credits.repository.ts';
import { changeInvoiceMoney } from './invoice-money.ts';
import { getInvoiceRow, invoiceEntity, invoiceParent } from './invoices.service.ts';

const personView = (p: repo.Person) => (p?.uid ? { user_uid: p.uid, full_name: p.fullName ?? '' } : null);

function toCreditNoteView(
  { creditNote: c, createdBy, voidedBy }: repo.CreditNoteWithPeople,
  currency: string,
) {
  return {
    uid: c.uid,
    invoice_uid: c.invoiceUid,
    amount_cents: c.amountCents,
    currency,
    reason: c.reason,
    memo: c.memo,
    status: c.status,
    created_by: personView(createdBy),
    created_at: c.createdAt.toISOString(),
    voided_at: c.voidedAt?.toISOString() ?? null,
    voided_by: personView(voidedBy),
    void_reason: c.voidReason,
  };
}
export type CreditNoteView = ReturnType<typeof toCreditNoteView>;

async function creditNoteView(
  tx: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  uid: string,
  currency: string,
) {
  const [row] = await repo.listCreditNotes(tx, organizationUid, invoiceUid, uid);
  return toCreditNoteView(row!, currency);
}

/** A credit note's fields an audit event records (its invoice is the event's parent). */
const auditFields = (c: repo.CreditNoteRow) => ({
  amountCents: c.amountCents,
  reason: c.reason,
  memo: c.memo,
  status: c.status,
  createdByUserUid: c.createdByUserUid,
  voidedAt: c.voidedAt,
  voidedByUserUid: c.voidedByUserUid,
  voidReason: c.voidReason,
});

/** Statuses that take no credit note, as they take no payment. */
const NO_MONEY = new Set(['draft', 'void', 'rejected']);

/** `GET /api/invoices/{uid}/credit-notes`: an invoice the caller may see (404 otherwise), oldest first. */
export async function listCreditNotes(db: Db, ctx: RequestContext, invoiceUid: string) {
  const invoice = await getInvoiceRow(db, ctx, invoiceUid);
  const rows = await repo.listCreditNotes(db, invoice.organizationUid, invoice.uid);
  return rows.map((row) => toCreditNoteView(row, invoice.currency));
}

/**
 * `POST /api/invoices/{uid}/credit-notes`: credit against what the invoice still owes. Its amount is
 * added to `pre_payment_credit_notes_cents` (so `amount_due_cents` and `amount_remaining_cents` shrink
 * by it) and may not exceed `amount_remaining_cents`; one that leaves nothing to pay settles the invoice
 * (→ `paid`), as a settling payment does.
 */
export async function createCreditNote(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  body: CreateCreditNoteBodyT,
) {
  const { result, invoice } = await changeInvoiceMoney(db, jobs, ctx, invoiceUid, async (tx, row) => {
    if (NO_MONEY.has(row.status)) {
      throw new AppError('invalid_state', `A ${row.status} invoice takes no credit note`);
    }
    if (body.amount_cents > row.amountRemainingCents) {
      throw validationFailed(
        'amount_cents',
        `exceeds the amount remaining (${Math.max(0, row.amountRemainingCents)})`,
      );
    }
    const note = await repo.insertCreditNote(tx, {
      organizationUid: row.organizationUid,
      invoiceUid: row.uid,
      amountCents: body.amount_cents,
      reason: body.reason,
      memo: body.memo ?? '',
      createdByUserUid: ctx.principal.user.uid,
    });
    const view = await creditNoteView(tx, row.organizationUid, row.uid, note.uid, row.currency);
    return {
      result: view,
      reason: 'credit_note_created',
      values: { prePaymentCreditNotesCents: row.prePaymentCreditNotesCents + note.amountCents },
      audit: [
        {
          organizationUid: row.organizationUid,
          action: 'credit_note.created',
          entityUid: note.uid,
          parent: invoiceParent(row.uid),
          changes: changesBetween(null, auditFields(note)),
        },
      ],
      emit: (etx, after) =>
        emitEvent(etx, jobs, ctx, 'credit_note.created', invoiceEntity(after), {
          credit_note: view,
          invoice: after,
        }),
    };
  });
  return { credit_note: result, invoice };
}

/**
 * `POST /api/invoices/{uid}/credit-notes/{credit_note_uid}/void`: the credit note stops counting (its
 * amount leaves `pre_payment_credit_notes_cents`), kept with who, when and why; a `paid` invoice that now
 * owes something goes back to `open`. Voiding twice is 409.
 */
export async function voidCreditNote(
  db: Db,
  jobs: Jobs,
  ctx: RequestContext,
  invoiceUid: string,
  creditNoteUid: string,
  body: VoidCreditNoteBodyT,
) {
  const { result, invoice } = await changeInvoiceMoney(db, jobs, ctx, invoiceUid, async (tx, row) => {
    const note = await repo.findCreditNote(tx, row.organizationUid, row.uid, creditNoteUid);
    if (!note) throw notFound('Credit note');
    if (note.status === 'void') throw new AppError('invalid_state', 'The credit note is already void');
    const updated = await repo.updateCreditNote(tx, row.organizationUid, note.uid, {
      status: 'void',
      voidedAt: new Date(),
      voidedByUserUid: ctx.principal.user.uid,
      voidReason: body.reason ?? null,
    });
    const view = await creditNoteView(tx, row.organizationUid, row.uid, note.uid, row.currency);
    return {
      result: view,
      reason: 'credit_note_voided',
      values: { prePaymentCreditNotesCents: row.prePaymentCreditNotesCents - note.amountCents },
      audit: [
        {
          organizationUid: row.organizationUid,
          action: 'credit_note.voided',
          entityUid: note.uid,
          parent: invoiceParent(row.uid),
          changes: changesBetween(auditFields(note), auditFields(updated)),
        },
      ],
      emit: (etx, after) =>
        emitEvent(etx, jobs, ctx, 'credit_note.voided', invoiceEntity(after), {
          credit_note: view,
          invoice: after,
        }),
    };
  });
  return { credit_note: result, invoice };
}
