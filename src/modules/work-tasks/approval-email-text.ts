import { formatMoney } from '../email/email-tokens.ts';
import { utcText } from '../../platform/utc-text.ts';

/** What an approval email says about an invoice the approval is about (as far as the approver may see it). */
export interface InvoiceFacts {
  uid: string;
  invoice_number: string;
  invoice_type: string;
  status: string;
  currency: string;
  total_cents: number;
  amount_remaining_cents: number;
  due_date: string | null;
  overdue_days: number;
  /** The client of a receivable, the vendor of a payable. */
  counterparty_name: string | null;
}

export interface ApprovalEmailInput {
  organizationName: string;
  /** Who asks: the agent's name. */
  agentName: string;
  title: string;
  reasoning: string;
  toolArgs: Record<string, unknown>;
  invoices: InvoiceFacts[];
  reviewUrl: string;
  inboxUrl: string;
  expiresAt: Date;
}

// An email is read on a phone: the arguments are a summary, never the whole payload (a long body, a
// large JSON member). The page behind the link shows everything.
const MAX_ARGS = 8;
const MAX_VALUE = 240;
const MAX_REASONING = 1200;
const MAX_TITLE = 150;

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 3).trimEnd()}...`;
}

function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return JSON.stringify(value) ?? String(value);
}

/** The tool's arguments as short indented lines: the tool's name (`type`) apart, at most eight members. */
export function argumentLines(toolArgs: Record<string, unknown>): string[] {
  const entries = Object.entries(toolArgs).filter(([name]) => name !== 'type');
  const lines = entries
    .slice(0, MAX_ARGS)
    .map(([name, value]) => `  ${name}: ${shorten(oneLine(valueText(value)), MAX_VALUE)}`);
  if (entries.length > MAX_ARGS) lines.push(`  (and ${entries.length - MAX_ARGS} more)`);
  return lines.length > 0 ? lines : ['  (no arguments)'];
}

/** `Invoice AR-77, client Acme: $1,250.00 due, 12 days overdue` (ASCII separators: any mail reader). */
export function invoiceLine(invoice: InvoiceFacts): string {
  const who = invoice.counterparty_name
    ? `, ${invoice.invoice_type === 'ACCOUNTS_PAYABLE' ? 'vendor' : 'client'} ${invoice.counterparty_name}`
    : '';
  const due = `${formatMoney(invoice.amount_remaining_cents, invoice.currency)} due`;
  const late =
    invoice.overdue_days > 0
      ? `, ${invoice.overdue_days} ${invoice.overdue_days === 1 ? 'day' : 'days'} overdue`
      : invoice.due_date
        ? `, due ${invoice.due_date.slice(0, 10)}`
        : '';
  return `Invoice ${invoice.invoice_number}${who}: ${due}${late}`;
}

export function toolName(toolArgs: Record<string, unknown>): string {
  return typeof toolArgs.type === 'string' && toolArgs.type !== '' ? toolArgs.type : 'an action';
}

/** The plain-text email (Remit's own mail): subject and body. */
export function approvalEmail(input: ApprovalEmailInput): { subject: string; text: string } {
  const title = shorten(oneLine(input.title), MAX_TITLE);
  const expires = utcText(input.expiresAt);
  const text = [
    `${input.agentName} asks for approval in ${input.organizationName}:`,
    '',
    title,
    '',
    `Tool: ${toolName(input.toolArgs)}`,
    'Arguments:',
    ...argumentLines(input.toolArgs),
    '',
    ...(input.reasoning.trim() ? ['Why:', shorten(input.reasoning.trim(), MAX_REASONING), ''] : []),
    ...(input.invoices.length > 0 ? [...input.invoices.map(invoiceLine), ''] : []),
    'Review and approve or reject:',
    input.reviewUrl,
    '',
    `This link is yours alone, works once, and expires ${expires}. Opening it decides nothing: the page`,
    'shows the request and asks you to approve or reject.',
    '',
    'Or open it in the Remit inbox:',
    input.inboxUrl,
    '',
    `You get these emails because you turned on approval emails for ${input.organizationName}.`,
    'To stop them: PATCH /api/me/preferences with {"approval_emails": false}.',
  ].join('\n');
  return { subject: `Approval needed: ${title}`, text: `${text}\n` };
}
