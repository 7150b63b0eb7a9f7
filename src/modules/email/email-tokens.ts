/**
 * Template tokens (interface 2.9): what each `{token}` of an invoice renders to, and the substitution
 * itself. Pure: the service hands in the invoice's values and the current time.
 */
import type { ContextType, InvoiceToken } from './email-fields.ts';

export interface TokenError {
  /** The token as written, braces included: `{client_email}`. */
  token: string;
  message: string;
}

/** A token's value, or why the entity has none. */
export type Resolution = { value: string } | { problem: string };

/** The values of an invoice that tokens are drawn from (a subset of the invoice view, interface 2.11). */
export interface InvoiceTokenSource {
  invoice_number: string;
  issue_date: Date | string | null;
  due_date: Date | string | null;
  currency: string;
  amount_due_cents: number;
  amount_remaining_cents: number;
  total_cents: number;
  overdue_days: number;
  invoice_link: string | null;
  client: { name: string; email: string | null } | null;
  organization_name: string;
  /**
   * `{hosted_invoice_url}`, resolved by the caller only when a template uses it (resolving it may make
   * the link); absent otherwise.
   */
  hosted_invoice_url?: Resolution | undefined;
}

const LONG_DATE = new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' });

/** `March 5, 2026`: the calendar day in UTC, as every date of the service is a UTC instant. */
export function formatLongDate(date: Date | string): string {
  return LONG_DATE.format(typeof date === 'string' ? new Date(date) : date);
}

const moneyFormats = new Map<string, Intl.NumberFormat | null>();

function moneyFormat(currency: string, exact: boolean): Intl.NumberFormat | null {
  const key = `${currency}:${exact}`;
  let format = moneyFormats.get(key);
  if (format === undefined) {
    try {
      format = new Intl.NumberFormat('en-US', {
        style: 'currency',
        currency,
        ...(exact ? { minimumFractionDigits: 2, maximumFractionDigits: 2 } : {}),
      });
    } catch {
      format = null;
    }
    moneyFormats.set(key, format);
  }
  return format;
}

/**
 * `$1,234.50`, `€1,234.50`: an amount in cents (hundredths, as every `*_cents` field of the service) in
 * the en-US currency style of its currency. Currencies shown without decimals (JPY, and COP in CLDR)
 * keep that style unless it would hide a fraction: 1050 cents of JPY is `¥10.50`, never a rounded `¥11`.
 * The amount goes to Intl as an exact decimal string, so large amounts pick up no float rounding.
 */
export function formatMoney(cents: number, currency: string): string {
  const code = currency.toUpperCase();
  const digits = String(Math.abs(Math.trunc(cents))).padStart(3, '0');
  const fraction = digits.slice(-2);
  const decimal = `${cents < 0 ? '-' : ''}${digits.slice(0, -2)}.${fraction}`;
  const plain = moneyFormat(code, false);
  if (!plain) return `${decimal} ${code}`;
  const hidesFraction = fraction !== '00' && plain.resolvedOptions().maximumFractionDigits! < 2;
  const format = hidesFraction ? moneyFormat(code, true)! : plain;
  // Intl accepts a decimal string (Intl.NumberFormat v3, Node ≥ 19) and formats it exactly.
  return format.format(decimal as unknown as number);
}

/** Every token of an invoice, resolved; `now` gives `{current_date}`. */
export function resolveInvoiceTokens(
  source: InvoiceTokenSource,
  now: Date,
): Record<InvoiceToken, Resolution> {
  const money = (cents: number) => ({ value: formatMoney(cents, source.currency) });
  const date = (value: Date | string | null, problem: string) =>
    value === null ? { problem } : { value: formatLongDate(value) };
  const email = source.client?.email?.trim();
  const link = source.invoice_link?.trim();
  return {
    invoice_number: { value: source.invoice_number },
    issue_date: date(source.issue_date, 'The invoice has no issue date'),
    due_date: date(source.due_date, 'The invoice has no due date'),
    // The token is the invoice's amount_due_cents (total less pre-payment credit notes), as named.
    amount_due: money(source.amount_due_cents),
    total_cents: money(source.total_cents),
    days_overdue: { value: String(source.overdue_days) },
    client_name: source.client ? { value: source.client.name } : { problem: 'The invoice has no client' },
    client_email: email
      ? { value: email }
      : {
          problem: source.client
            ? 'The client has no billing contact email'
            : 'The invoice has no client, so no billing contact email',
        },
    payment_link: link ? { value: link } : { problem: 'The invoice has no payment link (invoice_link)' },
    organization_name: { value: source.organization_name },
    current_date: { value: formatLongDate(now) },
    hosted_invoice_url: source.hosted_invoice_url ?? { problem: 'The hosted invoice link was not resolved' },
  };
}

const TOKEN = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Replaces each `{token}` of `text` in one pass (a value that itself looks like `{token}` is never
 * substituted again). Unknown and unresolvable tokens stay in the text as written and are reported once
 * each. One exception: the `host` of the `[Text]{{host}}` link markup is not a token when it is not a
 * known one, so `[Pay]{{example.com}}` and `[Pay]{{localhost}}` pass through silently, while
 * `[Pay]{{payment_link}}` still becomes a link to the invoice's payment link.
 */
export function renderTemplate(
  text: string,
  contextType: ContextType,
  resolutions: Readonly<Record<string, Resolution>>,
  errors: TokenError[],
): string {
  const reported = new Set(errors.map((e) => e.token));
  const report = (token: string, message: string) => {
    if (reported.has(token)) return;
    reported.add(token);
    errors.push({ token, message });
  };
  return text.replace(TOKEN, (whole: string, name: string, offset: number) => {
    const resolution = Object.hasOwn(resolutions, name) ? resolutions[name] : undefined;
    if (resolution === undefined) {
      const isLinkHost = text.slice(offset - 2, offset) === ']{' && text[offset + whole.length] === '}';
      if (!isLinkHost) {
        report(
          whole,
          `Unknown token for context type ${contextType}; GET /api/email/fields?context_type=${contextType} lists them`,
        );
      }
      return whole;
    }
    if ('problem' in resolution) {
      report(whole, resolution.problem);
      return whole;
    }
    return resolution.value;
  });
}
