import { describe, expect, it } from 'vitest';
import { isDestructive, moveLabel, reasonLabel } from './invoice-status.ts';

describe('invoice status words', () => {
  it('names each move as a button', () => {
    const ap = (from: string, to: string) => moveLabel('ACCOUNTS_PAYABLE', from, to);
    const ar = (from: string, to: string) => moveLabel('ACCOUNTS_RECEIVABLE', from, to);
    expect(['in_review', 'approved', 'rejected', 'void'].map((to) => ap('received', to))).toEqual([
      'Start review',
      'Approve',
      'Reject',
      'Void',
    ]);
    expect(['registered', 'scheduled', 'paid'].map((to) => ap('approved', to))).toEqual([
      'Mark registered',
      'Schedule',
      'Mark paid',
    ]);
    expect(ap('scheduled', 'approved')).toBe('Back to approved');
    expect(ap('rejected', 'in_review')).toBe('Back to review');
    expect(ap('paid', 'scheduled')).toBe('Back to scheduled');
    expect(ar('draft', 'open')).toBe('Open');
    expect(ar('uncollectible', 'open')).toBe('Reopen');
    expect(ar('open', 'uncollectible')).toBe('Mark uncollectible');
    expect(ar('open', 'something_new')).toBe('Something new');
  });

  it('asks before void and reject only', () => {
    expect(['void', 'rejected', 'approved', 'paid'].map(isDestructive)).toEqual([true, true, false, false]);
  });

  it('says why a status changed', () => {
    expect(['created', 'update', 'payment', 'refund'].map(reasonLabel)).toEqual([
      'created',
      'changed by hand',
      'a payment settled it',
      'refund',
    ]);
  });
});
