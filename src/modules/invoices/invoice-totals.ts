import { MAX_AMOUNT_CENTS } from '../../platform/http/schemas.ts';

/** Derived money of an invoice (CONTRACT §4), all integer cents. */
export interface InvoiceTotals {
  subtotal_cents: number;
  discount_cents: number;
  tax_cents: number;
  total_cents: number;
  pre_payment_credit_notes_cents: number;
  amount_due_cents: number;
  amount_paid_cents: number;
  amount_remaining_cents: number;
}

export interface TotalsInput {
  lines: { context_type: 'PRODUCT' | 'DISCOUNT'; line_total: number }[];
  taxCents: number;
  prePaymentCreditNotesCents: number;
  paidCents: number;
}

/**
 * A line total and every invoice amount stay within MAX_AMOUNT_CENTS, the one maximum of every amount.
 * quantity (≤ 1e9) × unit_price could reach 1e24: PostgreSQL refused it as a bigint and the caller got
 * a 500; sums of many large lines passed Number.MAX_SAFE_INTEGER and lost cents. Both are refused with
 * 422 (each sum is checked, so an inexact one is always over the maximum).
 */
export { MAX_AMOUNT_CENTS };

/** True when every amount stays within what is stored and computed exactly. */
export function totalsInRange(t: InvoiceTotals): boolean {
  return Object.values(t).every((v) => Math.abs(v) <= MAX_AMOUNT_CENTS);
}

export function lineTotal(quantity: number, unitPrice: number): number {
  return quantity * unitPrice;
}

/**
 * subtotal = Σ PRODUCT lines, discount = Σ DISCOUNT lines, total = subtotal − discount + tax,
 * amount due = total − pre-payment credit notes, remaining = due − paid.
 */
export function computeTotals(input: TotalsInput): InvoiceTotals {
  let subtotal = 0;
  let discount = 0;
  for (const line of input.lines) {
    if (line.context_type === 'DISCOUNT') discount += line.line_total;
    else subtotal += line.line_total;
  }
  const total = subtotal - discount + input.taxCents;
  const due = total - input.prePaymentCreditNotesCents;
  return {
    subtotal_cents: subtotal,
    discount_cents: discount,
    tax_cents: input.taxCents,
    total_cents: total,
    pre_payment_credit_notes_cents: input.prePaymentCreditNotesCents,
    amount_due_cents: due,
    amount_paid_cents: input.paidCents,
    amount_remaining_cents: due - input.paidCents,
  };
}

const DAY_MS = 86_400_000;

function utcDay(date: Date): number {
  return Math.floor(date.getTime() / DAY_MS);
}

/** Whole days past the due date, as of `today`; 0 when not yet due or when nothing is owed. */
export function overdueDays(
  dueDate: Date | null,
  amountRemaining: number,
  status: string,
  today: Date,
): number {
  if (!dueDate || amountRemaining <= 0) return 0;
  if (['paid', 'void', 'uncollectible', 'rejected', 'draft'].includes(status)) return 0;
  return Math.max(0, utcDay(today) - utcDay(dueDate));
}

/** Whole days since the issue date, as of `today`. */
export function ageDays(issueDate: Date | null, today: Date): number {
  if (!issueDate) return 0;
  return Math.max(0, utcDay(today) - utcDay(issueDate));
}
