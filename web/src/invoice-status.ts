/**
 * The words of an invoice's status panel (docs/console.md#invoices). Which moves are offered is the
 * API's (`allowed_next_statuses` of the status history): the transition table is not repeated here.
 */

type Kind = 'ACCOUNTS_RECEIVABLE' | 'ACCOUNTS_PAYABLE';

const LABELS: Record<string, string> = {
  open: 'Open',
  paid: 'Mark paid',
  uncollectible: 'Mark uncollectible',
  void: 'Void',
  received: 'Back to received',
  in_review: 'Start review',
  approved: 'Approve',
  rejected: 'Reject',
  registered: 'Mark registered',
  scheduled: 'Schedule',
};

/** The button that moves an invoice from `from` to `to`: "Approve", "Mark paid", "Reopen", … */
export function moveLabel(kind: Kind, from: string, to: string): string {
  if (kind === 'ACCOUNTS_RECEIVABLE' && to === 'open' && from !== 'draft') return 'Reopen';
  if (kind === 'ACCOUNTS_PAYABLE' && to === 'in_review' && from === 'rejected') return 'Back to review';
  // Back from scheduled or paid (marked paid by hand): no new approval, a step back.
  if (kind === 'ACCOUNTS_PAYABLE' && (from === 'scheduled' || from === 'paid')) {
    if (to === 'approved') return 'Back to approved';
    if (to === 'registered' && from === 'paid') return 'Back to registered';
    if (to === 'scheduled') return 'Back to scheduled';
    if (to === 'registered') return 'Mark registered';
  }
  return LABELS[to] ?? to.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

/** Moves that ask first: they end the invoice's road (void) or turn a payable down (reject). */
export const isDestructive = (to: string) => to === 'void' || to === 'rejected';

/** A history row's reason, in words. */
export function reasonLabel(reason: string): string {
  switch (reason) {
    case 'created':
      return 'created';
    case 'update':
      return 'changed by hand';
    case 'payment':
      return 'a payment settled it';
    case 'credit_note':
      return 'a credit note';
    default:
      return reason.replace(/_/g, ' ');
  }
}
