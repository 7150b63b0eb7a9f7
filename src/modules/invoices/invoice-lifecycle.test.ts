import { describe, expect, it } from 'vitest';
import {
  allowedNextStatuses,
  approvalLimitOf,
  checkTransition,
  formatCents,
  NO_APPROVAL_LIMITS,
  PAYABLE_TRANSITIONS,
  statusesTakingPayments,
  RECEIVABLE_TRANSITIONS,
  takesPayments,
  withinLimit,
} from './invoice-lifecycle.ts';
import { PAYABLE_STATUSES, RECEIVABLE_STATUSES } from './invoice-statuses.ts';

const AR = 'ACCOUNTS_RECEIVABLE' as const;
const AP = 'ACCOUNTS_PAYABLE' as const;

describe('the transition tables', () => {
  it('cover every status of their type and name only statuses of it', () => {
    expect(Object.keys(RECEIVABLE_TRANSITIONS).sort()).toEqual([...RECEIVABLE_STATUSES].sort());
    expect(Object.keys(PAYABLE_TRANSITIONS).sort()).toEqual([...PAYABLE_STATUSES].sort());
    for (const next of Object.values(RECEIVABLE_TRANSITIONS)) {
      for (const s of next) expect(RECEIVABLE_STATUSES).toContain(s);
    }
    for (const [from, next] of Object.entries(PAYABLE_TRANSITIONS)) {
      for (const s of next) expect(PAYABLE_STATUSES).toContain(s);
      expect(next).not.toContain(from);
    }
  });

  it('receivable: draft → open → paid | uncollectible | void; uncollectible back, paid late or void', () => {
    expect(allowedNextStatuses(AR, 'draft')).toEqual(['open', 'void']);
    expect(allowedNextStatuses(AR, 'open')).toEqual(['paid', 'uncollectible', 'void']);
    expect(allowedNextStatuses(AR, 'uncollectible')).toEqual(['open', 'paid', 'void']);
    expect(allowedNextStatuses(AR, 'paid')).toEqual([]);
    expect(allowedNextStatuses(AR, 'void')).toEqual([]);
    expect(checkTransition(AR, 'draft', 'paid')).toEqual({
      ok: false,
      from: 'draft',
      to: 'paid',
      allowed: ['open', 'void'],
    });
  });

  it('payable: review, registration and scheduling may be skipped, approval may not', () => {
    expect(checkTransition(AP, 'received', 'approved').ok).toBe(true);
    expect(checkTransition(AP, 'approved', 'paid').ok).toBe(true);
    for (const to of ['registered', 'scheduled', 'paid']) {
      for (const from of ['received', 'in_review', 'rejected']) {
        expect(checkTransition(AP, from, to).ok, `${from} → ${to}`).toBe(false);
      }
    }
    // Only approved leads into registered, scheduled and paid.
    for (const [from, next] of Object.entries(PAYABLE_TRANSITIONS)) {
      if (next.some((s) => ['registered', 'scheduled', 'paid'].includes(s))) {
        expect(['approved', 'registered', 'scheduled']).toContain(from);
      }
    }
    expect(allowedNextStatuses(AP, 'rejected')).toEqual(['in_review', 'void']);
    expect(allowedNextStatuses(AP, 'void')).toEqual([]);
  });

  it('the same status is always allowed and changes nothing, even a terminal one', () => {
    expect(checkTransition(AR, 'void', 'void')).toEqual({ ok: true, changed: false });
    expect(checkTransition(AP, 'paid', 'paid')).toEqual({ ok: true, changed: false });
    expect(checkTransition(AR, 'draft', 'open')).toEqual({ ok: true, changed: true });
  });

  it('paid is left only by a reversal, or when payments do not cover it (marked paid by hand)', () => {
    expect(checkTransition(AR, 'paid', 'open').ok).toBe(false);
    expect(checkTransition(AR, 'paid', 'open', { amountRemainingCents: 0 }).ok).toBe(false);
    expect(checkTransition(AR, 'paid', 'open', { reversal: true }).ok).toBe(true);
    expect(checkTransition(AR, 'paid', 'open', { amountRemainingCents: 100 }).ok).toBe(true);
    expect(checkTransition(AR, 'paid', 'void', { reversal: true }).ok).toBe(false);
    expect(allowedNextStatuses(AP, 'paid', { reversal: true })).toEqual([
      'approved',
      'registered',
      'scheduled',
    ]);
    // A reversal changes nothing elsewhere.
    expect(allowedNextStatuses(AR, 'open', { reversal: true })).toEqual(allowedNextStatuses(AR, 'open'));
  });

  it('an unknown status allows nothing', () => {
    expect(allowedNextStatuses(AR, 'approved')).toEqual([]);
  });
});

describe('payments', () => {
  it('are taken where a settling payment may move the invoice to paid, and when already paid', () => {
    expect(statusesTakingPayments(AR)).toEqual(['open', 'uncollectible', 'paid']);
    expect(statusesTakingPayments(AP)).toEqual(['approved', 'registered', 'scheduled', 'paid']);
    expect(takesPayments(AR, 'draft')).toBe(false);
    expect(takesPayments(AP, 'received')).toBe(false);
    expect(takesPayments(AP, 'rejected')).toBe(false);
  });
});

describe('approval limits', () => {
  const limits = {
    roles: { admin: null, member: 500_000 },
    users: [
      { user_uid: 'u-big', limit_cents: 2_000_000 },
      { user_uid: 'u-free', limit_cents: null },
    ],
  };

  it("a user's own limit wins over their role's; else the role's; none set: unlimited", () => {
    expect(approvalLimitOf(limits, 'u-other', 'member')).toEqual({ limitCents: 500_000, source: 'role' });
    expect(approvalLimitOf(limits, 'u-other', 'admin')).toEqual({ limitCents: null, source: 'role' });
    expect(approvalLimitOf(limits, 'u-big', 'member')).toEqual({ limitCents: 2_000_000, source: 'user' });
    expect(approvalLimitOf(limits, 'u-free', 'member')).toEqual({ limitCents: null, source: 'user' });
    expect(approvalLimitOf(NO_APPROVAL_LIMITS, 'u', 'member').limitCents).toBeNull();
  });

  it('a total equal to the limit is within it', () => {
    const limit = { limitCents: 500_000, source: 'role' as const };
    expect(withinLimit(limit, 500_000)).toBe(true);
    expect(withinLimit(limit, 500_001)).toBe(false);
    expect(withinLimit({ limitCents: null, source: 'role' }, 1e15)).toBe(true);
  });

  it('amounts read as decimals', () => {
    expect(formatCents(500_000)).toBe('5000.00');
    expect(formatCents(5)).toBe('0.05');
    expect(formatCents(-1234)).toBe('-12.34');
  });
});
