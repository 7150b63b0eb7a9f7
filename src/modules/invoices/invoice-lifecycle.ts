import type { InvoiceType, PayableStatus, ReceivableStatus } from './invoice-statuses.ts';

/**
 * The invoice lifecycles (docs/invoices.md#lifecycle): which status may follow which, per invoice type.
 * Pure; every path that changes a status asks it (invoice-lifecycle.service.ts).
 *
 * Receivable: draft → open → paid | void | uncollectible; uncollectible may be reinstated (open), paid
 * late or voided. Partially paid is not a status: an `open` invoice with `amount_paid_cents > 0` and
 * `amount_remaining_cents > 0`.
 *
 * Payable: received → in_review → approved → registered → scheduled → paid, with rejected and void.
 * Review, registration and scheduling may be skipped; approval may not: nothing reaches registered,
 * scheduled or paid without passing through approved.
 */
export const RECEIVABLE_TRANSITIONS: Readonly<Record<ReceivableStatus, readonly ReceivableStatus[]>> = {
  draft: ['open', 'void'],
  open: ['paid', 'uncollectible', 'void'],
  uncollectible: ['open', 'paid', 'void'],
  paid: [],
  void: [],
};

export const PAYABLE_TRANSITIONS: Readonly<Record<PayableStatus, readonly PayableStatus[]>> = {
  received: ['in_review', 'approved', 'rejected', 'void'],
  in_review: ['received', 'approved', 'rejected', 'void'],
  approved: ['registered', 'scheduled', 'paid', 'void'],
  registered: ['scheduled', 'paid', 'void'],
  scheduled: ['approved', 'registered', 'paid', 'void'],
  rejected: ['in_review', 'void'],
  paid: [],
  void: [],
};

/**
 * Moves out of `paid` (a reversal): open again for a receivable; back to approved, registered or
 * scheduled for a payable. Only money makes them (a refund, a voided payment or credit note:
 * `settle()` in invoice-settlement.ts, with `reversal`), or the API for an invoice marked paid by hand,
 * whose payments do not cover it.
 */
export const REVERSALS: Readonly<Record<InvoiceType, readonly string[]>> = {
  ACCOUNTS_RECEIVABLE: ['open'],
  ACCOUNTS_PAYABLE: ['approved', 'registered', 'scheduled'],
};

export interface TransitionContext {
  /** A refund or payment reversal takes a paid invoice back (REVERSALS). */
  reversal?: boolean;
  /** What is still owed: a paid invoice with something left was marked paid by hand. */
  amountRemainingCents?: number;
}

/** The statuses that may follow `from` (none for a status the type does not have). */
export function allowedNextStatuses(
  type: InvoiceType,
  from: string,
  context: TransitionContext = {},
): string[] {
  const table: Readonly<Record<string, readonly string[]>> =
    type === 'ACCOUNTS_RECEIVABLE' ? RECEIVABLE_TRANSITIONS : PAYABLE_TRANSITIONS;
  const next = [...(table[from] ?? [])];
  if (from === 'paid' && (context.reversal || (context.amountRemainingCents ?? 0) > 0)) {
    next.push(...REVERSALS[type]);
  }
  return next;
}

export type TransitionCheck =
  { ok: true; changed: boolean } | { ok: false; from: string; to: string; allowed: string[] };

/** Whether `from` → `to` is allowed; the same status is always allowed and changes nothing. */
export function checkTransition(
  type: InvoiceType,
  from: string,
  to: string,
  context: TransitionContext = {},
): TransitionCheck {
  if (from === to) return { ok: true, changed: false };
  const allowed = allowedNextStatuses(type, from, context);
  return allowed.includes(to) ? { ok: true, changed: true } : { ok: false, from, to, allowed };
}

/**
 * Whether an invoice in this status takes a payment: one a settling payment may move to paid, or one
 * already paid (then only what is left, if anything). Receivable: open, uncollectible, paid; payable:
 * approved, registered, scheduled, paid — a payable is paid only once approved.
 */
export function takesPayments(type: InvoiceType, status: string): boolean {
  return status === 'paid' || allowedNextStatuses(type, status).includes('paid');
}

/** Statuses that take payments, for messages. */
export function statusesTakingPayments(type: InvoiceType): string[] {
  const table = type === 'ACCOUNTS_RECEIVABLE' ? RECEIVABLE_TRANSITIONS : PAYABLE_TRANSITIONS;
  return Object.keys(table).filter((s) => takesPayments(type, s));
}

export interface ApprovalLimits {
  /** Per role, in cents; null: unlimited. */
  roles: { admin: number | null; member: number | null };
  /** Per user, overriding the role's limit; a null limit: unlimited. */
  users: { user_uid: string; limit_cents: number | null }[];
}

export const NO_APPROVAL_LIMITS: ApprovalLimits = Object.freeze({
  roles: Object.freeze({ admin: null, member: null }),
  users: Object.freeze([]) as unknown as ApprovalLimits['users'],
}) as ApprovalLimits;

export interface ApprovalLimit {
  limitCents: number | null;
  source: 'user' | 'role';
}

/** The limit that applies to a user of this role: their own override, else their role's. */
export function approvalLimitOf(
  limits: ApprovalLimits,
  userUid: string,
  role: 'admin' | 'member',
): ApprovalLimit {
  const own = limits.users.find((u) => u.user_uid === userUid);
  if (own) return { limitCents: own.limit_cents, source: 'user' };
  return { limitCents: limits.roles[role] ?? null, source: 'role' };
}

/** Whether a total is within a limit (equal is within). */
export function withinLimit(limit: ApprovalLimit, totalCents: number): boolean {
  return limit.limitCents === null || totalCents <= limit.limitCents;
}

/** 500000 → "5000.00". */
export function formatCents(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}
