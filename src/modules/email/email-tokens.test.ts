import { describe, expect, it } from 'vitest';
import { emailFields, INVOICE_TOKENS } from './email-fields.ts';
import {
  formatLongDate,
  formatMoney,
  renderTemplate,
  resolveInvoiceTokens,
  type InvoiceTokenSource,
  type TokenError,
} from './email-tokens.ts';

const source: InvoiceTokenSource = {
  invoice_number: 'INV-7',
  issue_date: new Date('2026-02-03T00:00:00Z'),
  due_date: '2026-03-05T00:00:00.000Z',
  currency: 'USD',
  amount_due_cents: 123450,
  amount_remaining_cents: 123450,
  total_cents: 150000,
  overdue_days: 12,
  invoice_link: 'https://pay.test/INV-7',
  client: { name: 'Client Co', email: 'cara@client.test' },
  organization_name: 'Org A',
  hosted_invoice_url: { value: 'https://remit.test/i/abc' },
};
const now = new Date('2026-03-17T23:30:00Z');

function render(text: string, s: InvoiceTokenSource = source) {
  const errors: TokenError[] = [];
  return { text: renderTemplate(text, 'invoice', resolveInvoiceTokens(s, now), errors), errors };
}

describe('formatting', () => {
  it('dates are en-US long form of the UTC day', () => {
    expect(formatLongDate(new Date('2026-03-05T00:00:00Z'))).toBe('March 5, 2026');
    expect(formatLongDate('2026-03-05T23:59:59Z')).toBe('March 5, 2026');
    expect(formatLongDate('2026-03-05T01:00:00+05:00')).toBe('March 4, 2026');
  });

  it('money is en-US currency style in the currency given, from cents', () => {
    expect(formatMoney(123450, 'USD')).toBe('$1,234.50');
    expect(formatMoney(123450, 'EUR')).toBe('€1,234.50');
    expect(formatMoney(123450, 'eur')).toBe('€1,234.50');
    expect(formatMoney(5, 'USD')).toBe('$0.05');
    expect(formatMoney(0, 'USD')).toBe('$0.00');
    expect(formatMoney(-2500, 'USD')).toBe('-$25.00');
    // Currencies shown without decimals keep that style unless it would hide a fraction.
    expect(formatMoney(123400, 'JPY')).toBe('¥1,234');
    expect(formatMoney(1050, 'JPY')).toBe('¥10.50');
    expect(formatMoney(100000, 'COP')).toBe('COP\u00a01,000');
    // A well-formed code Intl has no data for is still shown with its code.
    expect(formatMoney(123450, 'XYZ')).toBe('XYZ\u00a01,234.50');
    // Exact at the largest amounts the service stores (no float rounding).
    expect(formatMoney(999_999_999_999_999, 'USD')).toBe('$9,999,999,999,999.99');
  });
});

describe('renderTemplate for an invoice', () => {
  it('resolves every token of interface 2.9', () => {
    const text = INVOICE_TOKENS.map((t) => `{${t}}`).join('|');
    const { text: out, errors } = render(text);
    expect(errors).toEqual([]);
    expect(out).toBe(
      [
        'INV-7',
        'February 3, 2026',
        'March 5, 2026',
        '$1,234.50',
        '$1,500.00',
        '12',
        'Client Co',
        'cara@client.test',
        'https://pay.test/INV-7',
        'Org A',
        'March 17, 2026',
        'https://remit.test/i/abc',
      ].join('|'),
    );
  });

  it('keeps unknown and unresolvable tokens visible and reports each once', () => {
    const { text, errors } = render('{foo} {client_email} {payment_link} {foo} {due_date}', {
      ...source,
      client: { name: 'Client Co', email: '' },
      invoice_link: null,
      due_date: null,
    });
    expect(text).toBe('{foo} {client_email} {payment_link} {foo} {due_date}');
    expect(errors.map((e) => e.token)).toEqual(['{foo}', '{client_email}', '{payment_link}', '{due_date}']);
    for (const e of errors) expect(e.message.length).toBeGreaterThan(0);
  });

  it('no client: name and email are unresolvable', () => {
    const { errors } = render('{client_name} {client_email}', { ...source, client: null });
    expect(errors.map((e) => e.token)).toEqual(['{client_name}', '{client_email}']);
  });

  it('substitutes once: a value that looks like a token stays as it is', () => {
    const { text, errors } = render('{client_name} / {invoice_number}', {
      ...source,
      client: { name: '{invoice_number}', email: null },
    });
    expect(text).toBe('{invoice_number} / INV-7');
    expect(errors).toEqual([]);
  });

  it('leaves non-token braces alone, and the host of [Text]{{host}} is not a token', () => {
    const { text, errors } = render(
      '{ not a token } {{json}} {a.b} [Pay]{{localhost}} [Pay]{{payment_link}}',
    );
    expect(text).toBe('{ not a token } {{json}} {a.b} [Pay]{{localhost}} [Pay]{https://pay.test/INV-7}');
    expect(errors).toEqual([{ token: '{json}', message: expect.stringContaining('Unknown token') }]);
  });

  it('tokens are case-sensitive and inherited object keys are not tokens', () => {
    const { errors } = render('{Invoice_Number} {constructor} {toString}');
    expect(errors.map((e) => e.token)).toEqual(['{Invoice_Number}', '{constructor}', '{toString}']);
  });
});

describe('emailFields', () => {
  it('lists every invoice token with a description and an example', () => {
    const fields = emailFields('invoice');
    expect(fields.map((f) => f.token)).toEqual(INVOICE_TOKENS.map((t) => `{${t}}`));
    for (const f of fields) {
      expect(f.description.length).toBeGreaterThan(0);
      expect(f.example.length).toBeGreaterThan(0);
    }
  });
});
