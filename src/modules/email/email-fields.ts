/**
 * The dynamic fields (`{token}` placeholders) of email templates per context type (interface 2.9),
 * as listed by `GET /api/email/fields` (CONTRACT §3). The values are resolved in `email-tokens.ts`.
 */

export const CONTEXT_TYPES = ['invoice'] as const;
export type ContextType = (typeof CONTEXT_TYPES)[number];

export function isContextType(value: string): value is ContextType {
  return (CONTEXT_TYPES as readonly string[]).includes(value);
}

export interface EmailField {
  /** The placeholder as written in a template, braces included. */
  token: string;
  description: string;
  /** What the token renders to for an example invoice. */
  example: string;
}

export const INVOICE_TOKENS = [
  'invoice_number',
  'issue_date',
  'due_date',
  'amount_due',
  'total_cents',
  'days_overdue',
  'client_name',
  'client_email',
  'payment_link',
  'organization_name',
  'current_date',
  'hosted_invoice_url',
] as const;
export type InvoiceToken = (typeof INVOICE_TOKENS)[number];

const INVOICE_FIELDS: Record<InvoiceToken, Omit<EmailField, 'token'>> = {
  invoice_number: { description: "The invoice's number", example: 'INV-1042' },
  issue_date: {
    description: 'The issue date, long form (en-US, UTC); unresolvable when the invoice has none',
    example: 'March 5, 2026',
  },
  due_date: {
    description: 'The due date, long form (en-US, UTC); unresolvable when the invoice has none',
    example: 'April 4, 2026',
  },
  amount_due: {
    description:
      'The amount due (amount_due_cents: total less pre-payment credit notes), formatted in the invoice currency',
    example: '$1,234.50',
  },
  total_cents: {
    description: "The invoice total (total_cents), formatted in the invoice's currency",
    example: '$1,484.50',
  },
  days_overdue: {
    description: 'Whole days past the due date (0 when not yet due, paid or without a due date)',
    example: '12',
  },
  client_name: {
    description: "The client party's name; unresolvable when the invoice has no client",
    example: 'Acme Corp',
  },
  client_email: {
    description: "The email of the client's billing contact; unresolvable when there is none",
    example: 'ap@acme.example',
  },
  payment_link: {
    description: "The invoice's invoice_link; unresolvable when the invoice has none",
    example: 'https://pay.example.com/inv/INV-1042',
  },
  organization_name: {
    description: 'The name of the organization the invoice belongs to',
    example: 'Northwind Ltd',
  },
  current_date: { description: "Today's date, long form (en-US, UTC)", example: 'April 16, 2026' },
  hosted_invoice_url: {
    description:
      "The address of the receivable's hosted page (status, amounts, PDF; no sign-in), made when the invoice has no live link and the caller may make one (invoices:write); unresolvable for a payable",
    example: 'https://remit.example.com/i/3q2-7wEXAMPLEtokenkXq0-9fJd3u5r1GmZk8sXw4b',
  },
};

/** The fields of a context type, in the order of interface 2.9. */
export function emailFields(contextType: ContextType): EmailField[] {
  switch (contextType) {
    case 'invoice':
      return INVOICE_TOKENS.map((name) => ({ token: `{${name}}`, ...INVOICE_FIELDS[name] }));
  }
}
