import { and, asc, count, eq, gte, inArray, lt, lte, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../../platform/db/client.ts';
import { users } from '../tenancy/tenancy.tables.ts';
import { invoiceCreditNotes, invoicePaymentRefunds } from './credits.tables.ts';
import { invoicePayments, invoices } from './invoices.tables.ts';

export type PaymentRow = typeof invoicePayments.$inferSelect;
export type RefundRow = typeof invoicePaymentRefunds.$inferSelect;
export type CreditNoteRow = typeof invoiceCreditNotes.$inferSelect;
export type PaymentStatus = PaymentRow['status'];

/** A person a row names, as a left join reads them (null, or null fields, when the user is gone). */
export type Person = { uid: string | null; fullName: string | null } | null;

const recorder = alias(users, 'recorder');
const voider = alias(users, 'voider');
const person = (table: typeof recorder | typeof voider) => ({ uid: table.uid, fullName: table.fullName });

/** A payment with who recorded it and who voided it (their names, for people reading it). */
const paymentColumns = {
  payment: invoicePayments,
  recordedBy: person(recorder),
  voidedBy: person(voider),
};
export interface PaymentWithPeople {
  payment: PaymentRow;
  recordedBy: Person;
  voidedBy: Person;
}

// ---- payments ----

/** One payment of one invoice; `forUpdate` under the invoice's row lock (taken first, always). */
export async function findPayment(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<PaymentRow | undefined> {
  const query = db
    .select()
    .from(invoicePayments)
    .where(
      and(
        eq(invoicePayments.organizationUid, organizationUid),
        eq(invoicePayments.invoiceUid, invoiceUid),
        eq(invoicePayments.uid, uid),
      ),
    );
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function updatePayment(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof invoicePayments.$inferInsert>,
): Promise<PaymentRow> {
  const [row] = await db
    .update(invoicePayments)
    .set(values)
    .where(and(eq(invoicePayments.organizationUid, organizationUid), eq(invoicePayments.uid, uid)))
    .returning();
  return row!;
}

/** An invoice's payments, oldest first (by `paid_at`). */
export async function listInvoicePayments(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<PaymentWithPeople[]> {
  return db
    .select(paymentColumns)
    .from(invoicePayments)
    .leftJoin(recorder, eq(recorder.uid, invoicePayments.createdByUserUid))
    .leftJoin(voider, eq(voider.uid, invoicePayments.voidedByUserUid))
    .where(
      and(eq(invoicePayments.organizationUid, organizationUid), eq(invoicePayments.invoiceUid, invoiceUid)),
    )
    .orderBy(asc(invoicePayments.paidAt), asc(invoicePayments.createdAt), asc(invoicePayments.uid));
}

export interface PaymentFilters {
  invoiceUid?: string | undefined;
  status?: PaymentStatus | undefined;
  from?: Date | undefined;
  /** Exclusive. */
  before?: Date | undefined;
  /** Inclusive (a date-time given as `to`). */
  until?: Date | undefined;
}

/**
 * One page of an organization's payments, newest first (by `paid_at`), with their invoice's number, type
 * and currency, and how many match. `visible` narrows to the invoices the caller may see (members).
 */
export async function listOrganizationPayments(
  db: DbOrTx,
  organizationUid: string,
  visible: SQL | undefined,
  filters: PaymentFilters,
  limit: number,
  offset: number,
) {
  const where = and(
    eq(invoicePayments.organizationUid, organizationUid),
    filters.invoiceUid ? eq(invoicePayments.invoiceUid, filters.invoiceUid) : undefined,
    filters.status ? eq(invoicePayments.status, filters.status) : undefined,
    filters.from ? gte(invoicePayments.paidAt, filters.from) : undefined,
    filters.before ? lt(invoicePayments.paidAt, filters.before) : undefined,
    filters.until ? lte(invoicePayments.paidAt, filters.until) : undefined,
    visible,
  );
  const [rows, totals] = await Promise.all([
    db
      .select({
        ...paymentColumns,
        invoice: {
          invoiceNumber: invoices.invoiceNumber,
          invoiceType: invoices.invoiceType,
          currency: invoices.currency,
        },
      })
      .from(invoicePayments)
      .innerJoin(
        invoices,
        and(
          eq(invoices.organizationUid, invoicePayments.organizationUid),
          eq(invoices.uid, invoicePayments.invoiceUid),
        ),
      )
      .leftJoin(recorder, eq(recorder.uid, invoicePayments.createdByUserUid))
      .leftJoin(voider, eq(voider.uid, invoicePayments.voidedByUserUid))
      .where(where)
      // Spelled as the index is built (organization, paid_at DESC, uid DESC).
      .orderBy(sql`${invoicePayments.paidAt} desc`, sql`${invoicePayments.uid} desc`)
      .limit(limit)
      .offset(offset),
    db
      .select({ total: count() })
      .from(invoicePayments)
      .innerJoin(
        invoices,
        and(
          eq(invoices.organizationUid, invoicePayments.organizationUid),
          eq(invoices.uid, invoicePayments.invoiceUid),
        ),
      )
      .where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

// ---- refunds ----

export async function insertRefund(
  db: DbOrTx,
  values: typeof invoicePaymentRefunds.$inferInsert,
): Promise<RefundRow> {
  const [row] = await db.insert(invoicePaymentRefunds).values(values).returning();
  return row!;
}

export interface RefundWithPerson {
  refund: RefundRow;
  refundedBy: Person;
}

/** The refunds of these payments, oldest first, with who made each. */
export async function listRefunds(
  db: DbOrTx,
  organizationUid: string,
  paymentUids: string[],
): Promise<RefundWithPerson[]> {
  if (paymentUids.length === 0) return [];
  return db
    .select({ refund: invoicePaymentRefunds, refundedBy: person(recorder) })
    .from(invoicePaymentRefunds)
    .leftJoin(recorder, eq(recorder.uid, invoicePaymentRefunds.createdByUserUid))
    .where(
      and(
        eq(invoicePaymentRefunds.organizationUid, organizationUid),
        inArray(invoicePaymentRefunds.paymentUid, paymentUids),
      ),
    )
    .orderBy(asc(invoicePaymentRefunds.createdAt), asc(invoicePaymentRefunds.uid));
}

// ---- credit notes ----

export async function insertCreditNote(
  db: DbOrTx,
  values: typeof invoiceCreditNotes.$inferInsert,
): Promise<CreditNoteRow> {
  const [row] = await db.insert(invoiceCreditNotes).values(values).returning();
  return row!;
}

export async function findCreditNote(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  uid: string,
): Promise<CreditNoteRow | undefined> {
  const [row] = await db
    .select()
    .from(invoiceCreditNotes)
    .where(
      and(
        eq(invoiceCreditNotes.organizationUid, organizationUid),
        eq(invoiceCreditNotes.invoiceUid, invoiceUid),
        eq(invoiceCreditNotes.uid, uid),
      ),
    );
  return row;
}

export async function updateCreditNote(
  db: DbOrTx,
  organizationUid: string,
  uid: string,
  values: Partial<typeof invoiceCreditNotes.$inferInsert>,
): Promise<CreditNoteRow> {
  const [row] = await db
    .update(invoiceCreditNotes)
    .set(values)
    .where(and(eq(invoiceCreditNotes.organizationUid, organizationUid), eq(invoiceCreditNotes.uid, uid)))
    .returning();
  return row!;
}

export interface CreditNoteWithPeople {
  creditNote: CreditNoteRow;
  createdBy: Person;
  voidedBy: Person;
}

/** An invoice's credit notes (or one), oldest first, with who issued and who voided each. */
export async function listCreditNotes(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
  uid?: string,
): Promise<CreditNoteWithPeople[]> {
  return db
    .select({ creditNote: invoiceCreditNotes, createdBy: person(recorder), voidedBy: person(voider) })
    .from(invoiceCreditNotes)
    .leftJoin(recorder, eq(recorder.uid, invoiceCreditNotes.createdByUserUid))
    .leftJoin(voider, eq(voider.uid, invoiceCreditNotes.voidedByUserUid))
    .where(
      and(
        eq(invoiceCreditNotes.organizationUid, organizationUid),
        eq(invoiceCreditNotes.invoiceUid, invoiceUid),
        uid ? eq(invoiceCreditNotes.uid, uid) : undefined,
      ),
    )
    .orderBy(asc(invoiceCreditNotes.createdAt), asc(invoiceCreditNotes.uid));
}

/** Whether the invoice has a credit note that counts (issued, not voided). */
export async function hasIssuedCreditNotes(
  db: DbOrTx,
  organizationUid: string,
  invoiceUid: string,
): Promise<boolean> {
  const [row] = await db
    .select({ one: sql<number>`1` })
    .from(invoiceCreditNotes)
    .where(
      and(
        eq(invoiceCreditNotes.organizationUid, organizationUid),
        eq(invoiceCreditNotes.invoiceUid, invoiceUid),
        eq(invoiceCreditNotes.status, 'issued'),
      ),
    )
    .limit(1);
  return row !== undefined;
}
