export const RECEIVABLE_STATUSES = ['draft', 'open', 'paid', 'void', 'uncollectible'] as const;
export const PAYABLE_STATUSES = [
  'received',
  'in_review',
  'approved',
  'registered',
  'scheduled',
  'paid',
  'rejected',
  'void',
] as const;

export type ReceivableStatus = (typeof RECEIVABLE_STATUSES)[number];
export type PayableStatus = (typeof PAYABLE_STATUSES)[number];
export type InvoiceType = 'ACCOUNTS_RECEIVABLE' | 'ACCOUNTS_PAYABLE';

export function statusesFor(type: InvoiceType): readonly string[] {
  return type === 'ACCOUNTS_RECEIVABLE' ? RECEIVABLE_STATUSES : PAYABLE_STATUSES;
}

export function defaultStatus(type: InvoiceType): string {
  return type === 'ACCOUNTS_RECEIVABLE' ? 'draft' : 'received';
}
