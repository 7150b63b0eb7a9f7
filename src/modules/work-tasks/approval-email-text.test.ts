import { describe, expect, it } from 'vitest';
import { approvalEmail, argumentLines, invoiceLine, type InvoiceFacts } from './approval-email-text.ts';

const invoice: InvoiceFacts = {
  uid: '0b7e3f43-52a4-4b35-9c53-5b8fd1d5f0aa',
  invoice_number: 'AR-77',
  invoice_type: 'ACCOUNTS_RECEIVABLE',
  status: 'open',
  currency: 'USD',
  total_cents: 150000,
  amount_remaining_cents: 125000,
  due_date: '2031-04-24T00:00:00.000Z',
  overdue_days: 12,
  counterparty_name: 'Acme Corp',
};

describe('the approval email', () => {
  const email = approvalEmail({
    organizationName: 'Org A',
    agentName: 'Collector',
    title: 'Send a reminder\nfor AR-77?',
    reasoning: 'AR-77 is 12 days overdue.',
    toolArgs: {
      type: 'send_email',
      subject: 'Overdue',
      recipients: ['ap@acme.test', 'cfo@acme.test'],
      body: 'x'.repeat(5000),
    },
    invoices: [invoice],
    reviewUrl: 'https://remit.test/approval?token=abc.def',
    inboxUrl: 'https://remit.test/app/inbox/uid',
    expiresAt: new Date('2031-05-09T12:00:00Z'),
  });

  it('names the request in its subject, on one line', () => {
    expect(email.subject).toBe('Approval needed: Send a reminder for AR-77?');
  });

  it('says who asks, the tool, short arguments, why, the invoice, and both links', () => {
    expect(email.text).toContain('Collector asks for approval in Org A:');
    expect(email.text).toContain('Tool: send_email');
    expect(email.text).toContain('  recipients: ap@acme.test, cfo@acme.test');
    expect(email.text).toContain('Why:\nAR-77 is 12 days overdue.');
    expect(email.text).toContain('Invoice AR-77, client Acme Corp: $1,250.00 due, 12 days overdue');
    expect(email.text).toContain('Review and approve or reject:\nhttps://remit.test/approval?token=abc.def');
    expect(email.text).toContain('https://remit.test/app/inbox/uid');
    expect(email.text).toContain('expires 2031-05-09 12:00 UTC');
  });

  it('never carries a huge argument whole', () => {
    expect(email.text.length).toBeLessThan(2500);
    expect(email.text).toMatch(/body: x{200,}\.\.\./);
  });

  it('lists at most eight arguments and says how many more', () => {
    const many = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`a${i}`, i]));
    const lines = argumentLines(many);
    expect(lines).toHaveLength(9);
    expect(lines.at(-1)).toBe('  (and 4 more)');
    expect(argumentLines({ type: 'noop' })).toEqual(['  (no arguments)']);
  });

  it('an invoice not yet overdue says when it is due; a payable names its vendor', () => {
    expect(
      invoiceLine({ ...invoice, overdue_days: 0, invoice_type: 'ACCOUNTS_PAYABLE', currency: 'EUR' }),
    ).toBe('Invoice AR-77, vendor Acme Corp: €1,250.00 due, due 2031-04-24');
  });
});
