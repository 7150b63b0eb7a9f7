/**
 * The receivables formulas behind the preset metrics (docs/metrics.md defines each one). Pure functions
 * over plain data, so each is unit-tested on hand-computed numbers; the repository only loads the facts.
 *
 * Every date is a UTC calendar day, `YYYY-MM-DD`. A balance "at day D" means at the end of that day.
 */

export type Day = string;

/**
 * A receivable invoice as the formulas see it: an accounts-receivable invoice in status `open` or
 * `paid` that has an issue date. Drafts are not issued; void and uncollectible invoices carry no record
 * of when they stopped being receivable, so they are left out of every date, past or present.
 */
export interface ReceivableInvoice {
  uid: string;
  clientPartyUid: string | null;
  issuedOn: Day;
  dueOn: Day | null;
  /** What the invoice asks the client to pay: total − pre-payment credit notes. */
  amountDueCents: number;
  /** Paid invoices only: from this day on nothing is owed, whatever the payments add up to. */
  settledOn: Day | null;
  payments: { paidOn: Day; amountCents: number }[];
}

const DAY_MS = 86_400_000;

function dayNumber(day: Day): number {
  return Date.UTC(Number(day.slice(0, 4)), Number(day.slice(5, 7)) - 1, Number(day.slice(8, 10))) / DAY_MS;
}

function fromDayNumber(n: number): Day {
  return new Date(n * DAY_MS).toISOString().slice(0, 10);
}

export function addDays(day: Day, days: number): Day {
  return fromDayNumber(dayNumber(day) + days);
}

/** b − a in whole days. */
export function daysBetween(a: Day, b: Day): number {
  return dayNumber(b) - dayNumber(a);
}

/** `YYYY-MM` of a day. */
export function monthOf(day: Day): string {
  return day.slice(0, 7);
}

export function daysInMonth(month: string): number {
  return new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 0)).getUTCDate();
}

export function previousMonth(month: string): string {
  const year = Number(month.slice(0, 4));
  const m = Number(month.slice(5, 7));
  return m === 1 ? `${year - 1}-12` : `${year}-${String(m - 1).padStart(2, '0')}`;
}

/** `month` shifted back by `count` months. */
export function monthsBefore(month: string, count: number): string {
  let result = month;
  for (let i = 0; i < count; i++) result = previousMonth(result);
  return result;
}

export const round2 = (value: number) => Math.round(value * 100) / 100;

/**
 * What the client still owes on the invoice at the end of `day`: nothing before it was issued, nothing
 * once a paid invoice is settled, otherwise the amount due less the payments made by that day.
 */
export function outstandingCents(invoice: ReceivableInvoice, day: Day): number {
  if (invoice.issuedOn > day) return 0;
  if (invoice.settledOn !== null && invoice.settledOn <= day) return 0;
  let paid = 0;
  for (const p of invoice.payments) if (p.paidOn <= day) paid += p.amountCents;
  return Math.max(0, invoice.amountDueCents - paid);
}

/** Whole days past the due date at `day`; 0 when not yet due (or due that day) or without a due date. */
export function daysPastDue(invoice: ReceivableInvoice, day: Day): number {
  if (invoice.dueOn === null) return 0;
  return Math.max(0, daysBetween(invoice.dueOn, day));
}

export const AGING_BUCKETS = ['current', 'days_1_30', 'days_31_60', 'days_61_90', 'over_90'] as const;
export type AgingBucket = (typeof AGING_BUCKETS)[number];

export function agingBucketOf(daysPast: number): AgingBucket {
  if (daysPast <= 0) return 'current';
  if (daysPast <= 30) return 'days_1_30';
  if (daysPast <= 60) return 'days_31_60';
  if (daysPast <= 90) return 'days_61_90';
  return 'over_90';
}

export interface Aging {
  cents: Record<AgingBucket, number>;
  counts: Record<AgingBucket, number>;
  totalCents: number;
  invoiceCount: number;
}

/** The receivables balance at `day`, split by days past due; invoices with nothing owed are left out. */
export function agingAt(invoices: readonly ReceivableInvoice[], day: Day): Aging {
  const zero = () => ({ current: 0, days_1_30: 0, days_31_60: 0, days_61_90: 0, over_90: 0 });
  const aging: Aging = { cents: zero(), counts: zero(), totalCents: 0, invoiceCount: 0 };
  for (const invoice of invoices) {
    const owed = outstandingCents(invoice, day);
    if (owed <= 0) continue;
    const bucket = agingBucketOf(daysPastDue(invoice, day));
    aging.cents[bucket] += owed;
    aging.counts[bucket] += 1;
    aging.totalCents += owed;
    aging.invoiceCount += 1;
  }
  return aging;
}

/** Σ outstanding at `day` of the invoices at least one day past due, and how many there are. */
export function overdueAt(
  invoices: readonly ReceivableInvoice[],
  day: Day,
): { amountCents: number; count: number } {
  let amountCents = 0;
  let count = 0;
  for (const invoice of invoices) {
    const owed = outstandingCents(invoice, day);
    if (owed > 0 && daysPastDue(invoice, day) >= 1) {
      amountCents += owed;
      count += 1;
    }
  }
  return { amountCents, count };
}

/** Σ amount due of the invoices issued from `from` to `to`, both included. */
export function creditSalesCents(invoices: readonly ReceivableInvoice[], from: Day, to: Day): number {
  let sum = 0;
  for (const invoice of invoices)
    if (invoice.issuedOn >= from && invoice.issuedOn <= to) sum += invoice.amountDueCents;
  return sum;
}

/** How many months before the as-of month the DSO countback may walk. */
export const DSO_MAX_PRIOR_MONTHS = 24;

export interface DsoStep {
  month: string;
  /** Days of the month that count: days 1 … D for the as-of month, the whole month before it. */
  days: number;
  sales_cents: number;
  /** Balance still to cover when this month was reached. */
  balance_before_cents: number;
  /** Days this month added to DSO. */
  days_counted: number;
}

export interface DsoResult {
  days: number;
  balanceCents: number;
  steps: DsoStep[];
  /** False when the walk ran out of months before the sales covered the balance. */
  fullyCovered: boolean;
}

/**
 * Days sales outstanding, countback method. Start with the receivables balance at D and the as-of
 * month (days 1 … D). While a month's credit sales do not cover what is left of the balance, count all
 * of its days, take its sales off the balance and step one month back; the month whose sales do cover
 * the rest adds `days × rest ÷ sales`. `salesByMonth` maps `YYYY-MM` to credit sales (cents), the as-of
 * month counting only invoices issued up to D.
 */
export function dsoCountback(
  balanceCents: number,
  salesByMonth: Readonly<Record<string, number>>,
  day: Day,
  maxPriorMonths = DSO_MAX_PRIOR_MONTHS,
): DsoResult {
  const steps: DsoStep[] = [];
  if (balanceCents <= 0)
    return { days: 0, balanceCents: Math.max(0, balanceCents), steps, fullyCovered: true };
  let rest = balanceCents;
  let total = 0;
  let month = monthOf(day);
  for (let k = 0; k <= maxPriorMonths; k++) {
    const days = k === 0 ? Number(day.slice(8, 10)) : daysInMonth(month);
    const sales = salesByMonth[month] ?? 0;
    const step: DsoStep = { month, days, sales_cents: sales, balance_before_cents: rest, days_counted: days };
    if (sales > 0 && sales >= rest) {
      step.days_counted = (days * rest) / sales;
      total += step.days_counted;
      steps.push(step);
      return { days: round2(total), balanceCents, steps, fullyCovered: true };
    }
    total += days;
    rest -= sales;
    steps.push(step);
    month = previousMonth(month);
  }
  return { days: round2(total), balanceCents, steps, fullyCovered: false };
}

/** The CEI window: the 30 days that end on D; the beginning balance is the one at the end of D − 30. */
export function ceiPeriod(day: Day): { start: Day; end: Day; beginningAt: Day } {
  return { start: addDays(day, -29), end: day, beginningAt: addDays(day, -30) };
}

export interface CeiInputs {
  period_start: Day;
  period_end: Day;
  beginning_receivables_cents: number;
  credit_sales_cents: number;
  ending_total_receivables_cents: number;
  ending_current_receivables_cents: number;
}

export function ceiInputs(invoices: readonly ReceivableInvoice[], day: Day): CeiInputs {
  const period = ceiPeriod(day);
  let beginning = 0;
  for (const invoice of invoices) beginning += outstandingCents(invoice, period.beginningAt);
  const ending = agingAt(invoices, day);
  return {
    period_start: period.start,
    period_end: period.end,
    beginning_receivables_cents: beginning,
    credit_sales_cents: creditSalesCents(invoices, period.start, period.end),
    ending_total_receivables_cents: ending.totalCents,
    ending_current_receivables_cents: ending.cents.current,
  };
}

/**
 * Collection effectiveness index, in percent:
 * (beginning + credit sales − ending total) ÷ (beginning + credit sales − ending current) × 100.
 * Null when the denominator is not positive: nothing was due in the period, so there is nothing to rate.
 */
export function collectionEffectivenessIndex(inputs: CeiInputs): number | null {
  const available = inputs.beginning_receivables_cents + inputs.credit_sales_cents;
  const denominator = available - inputs.ending_current_receivables_cents;
  if (denominator <= 0) return null;
  return round2(((available - inputs.ending_total_receivables_cents) / denominator) * 100);
}
