import {
  agingAt,
  ceiInputs,
  collectionEffectivenessIndex,
  dsoCountback,
  outstandingCents,
  overdueAt,
  type AgingBucket,
  type Day,
  type ReceivableInvoice,
} from './metric-formulas.ts';
import type {
  METRIC_CONTEXT_TYPES,
  METRIC_PERIODS,
  METRIC_STORAGE_UNITS,
  METRIC_VALUE_TYPES,
} from './metrics.tables.ts';

/** The formulas a preset definition can name in its `preset` column. */
export const PRESET_FORMULAS = [
  'dso_countback',
  'overdue_amount',
  'overdue_invoice_count',
  'aging_current',
  'aging_1_30',
  'aging_31_60',
  'aging_61_90',
  'aging_over_90',
  'collection_effectiveness_index',
] as const;
export type PresetFormula = (typeof PRESET_FORMULAS)[number];

export function isPresetFormula(value: string | null): value is PresetFormula {
  return value !== null && (PRESET_FORMULAS as readonly string[]).includes(value);
}

export interface PresetDefinition {
  uid: string;
  name: string;
  contextType: (typeof METRIC_CONTEXT_TYPES)[number];
  description: string;
  formula: string;
  valueType: (typeof METRIC_VALUE_TYPES)[number];
  storageUnit: (typeof METRIC_STORAGE_UNITS)[number];
  periodDefinition: (typeof METRIC_PERIODS)[number];
  preset: PresetFormula;
}

const RECEIVABLES =
  'Receivable invoices: accounts-receivable invoices in status open or paid that have an issue date. ' +
  'Outstanding at day D: 0 if issued after D or (paid) settled by D, else amount_due_cents − payments made by D. ' +
  'Days past due at D: D − due date (0 when not yet due or no due date). All days are UTC dates.';

const agingPreset = (uid: string, name: string, preset: PresetFormula, range: string): PresetDefinition => ({
  uid,
  name,
  contextType: 'ORGANIZATION',
  description: `Receivables balance ${range}, as of the metric date.`,
  formula: `Σ outstanding at D of receivable invoices ${range}. ${RECEIVABLES}`,
  valueType: 'currency',
  storageUnit: 'cents',
  periodDefinition: 'as_of_date',
  preset,
});

/** What `remit metrics presets` installs (docs/metrics.md defines each formula with an example). */
export const PRESET_DEFINITIONS: readonly PresetDefinition[] = [
  {
    uid: 'dso_countback',
    name: 'DSO (countback)',
    contextType: 'ORGANIZATION',
    description:
      'Days sales outstanding by the countback method: how many days of recent credit sales the receivables balance represents.',
    formula:
      'B = Σ outstanding at D. Walk back from the month of D (days 1…D) one calendar month at a time (at most 24 months before it): ' +
      'while the month’s credit sales S (Σ amount_due_cents of receivable invoices issued in it, up to D) are < the rest R of B, add all its days and R −= S; ' +
      'the month with S ≥ R adds days × R ÷ S. DSO = the days added, rounded to 2 decimals; 0 when B = 0. ' +
      RECEIVABLES,
    valueType: 'days',
    storageUnit: 'raw',
    periodDefinition: 'as_of_date',
    preset: 'dso_countback',
  },
  {
    uid: 'overdue_amount_cents',
    name: 'Overdue amount',
    contextType: 'ORGANIZATION',
    description: 'What clients owe on invoices past their due date, as of the metric date.',
    formula: `Σ outstanding at D of receivable invoices at least 1 day past due. ${RECEIVABLES}`,
    valueType: 'currency',
    storageUnit: 'cents',
    periodDefinition: 'as_of_date',
    preset: 'overdue_amount',
  },
  {
    uid: 'overdue_invoice_count',
    name: 'Overdue invoices',
    contextType: 'ORGANIZATION',
    description:
      'How many invoices are past their due date with something still owed, as of the metric date.',
    formula: `Count of receivable invoices with outstanding at D > 0 and at least 1 day past due. ${RECEIVABLES}`,
    valueType: 'count',
    storageUnit: 'raw',
    periodDefinition: 'as_of_date',
    preset: 'overdue_invoice_count',
  },
  agingPreset('aging_current_cents', 'Aging: current', 'aging_current', 'not yet past due (0 days)'),
  agingPreset('aging_1_30_cents', 'Aging: 1–30 days past due', 'aging_1_30', '1 to 30 days past due'),
  agingPreset('aging_31_60_cents', 'Aging: 31–60 days past due', 'aging_31_60', '31 to 60 days past due'),
  agingPreset('aging_61_90_cents', 'Aging: 61–90 days past due', 'aging_61_90', '61 to 90 days past due'),
  agingPreset(
    'aging_over_90_cents',
    'Aging: over 90 days past due',
    'aging_over_90',
    'more than 90 days past due',
  ),
  {
    uid: 'cei_trailing_30_days',
    name: 'Collection effectiveness index (30 days)',
    contextType: 'ORGANIZATION',
    description:
      'Share of what was collectible over the 30 days ending on the metric date that was collected, in percent.',
    formula:
      'Period: the 30 days D−29 … D. BR = Σ outstanding at D−30; CS = Σ amount_due_cents of receivable invoices issued in the period; ' +
      'ET = Σ outstanding at D; EC = the part of ET not past due at D. CEI = (BR + CS − ET) ÷ (BR + CS − EC) × 100, rounded to 2 decimals; ' +
      'no value when BR + CS − EC ≤ 0. ' +
      RECEIVABLES,
    valueType: 'percentage',
    storageUnit: 'raw',
    periodDefinition: 'trailing_30_days',
    preset: 'collection_effectiveness_index',
  },
  {
    uid: 'client_overdue_amount_cents',
    name: 'Client overdue amount',
    contextType: 'PARTY',
    description: 'What one client owes on invoices past their due date, as of the metric date.',
    formula: `Σ outstanding at D of the client’s receivable invoices (client_party_uid) at least 1 day past due. ${RECEIVABLES}`,
    valueType: 'currency',
    storageUnit: 'cents',
    periodDefinition: 'as_of_date',
    preset: 'overdue_amount',
  },
  {
    uid: 'client_overdue_invoice_count',
    name: 'Client overdue invoices',
    contextType: 'PARTY',
    description:
      'How many of one client’s invoices are past due with something still owed, as of the metric date.',
    formula: `Count of the client’s receivable invoices with outstanding at D > 0 and at least 1 day past due. ${RECEIVABLES}`,
    valueType: 'count',
    storageUnit: 'raw',
    periodDefinition: 'as_of_date',
    preset: 'overdue_invoice_count',
  },
];

/** The facts one entity's preset values are computed from: its receivable invoices and monthly sales. */
export interface PresetFacts {
  invoices: readonly ReceivableInvoice[];
  /** `YYYY-MM` → Σ amount_due_cents of receivable invoices issued that month (the as-of month up to D). */
  salesByMonth: Readonly<Record<string, number>>;
}

export interface PresetValue {
  value: number;
  metadata: Record<string, unknown>;
}

const AGING_OF: Partial<Record<PresetFormula, AgingBucket>> = {
  aging_current: 'current',
  aging_1_30: 'days_1_30',
  aging_31_60: 'days_31_60',
  aging_61_90: 'days_61_90',
  aging_over_90: 'over_90',
};

/**
 * One preset's value at `day` with the inputs it came from (stored as the value's `_metadata`); null
 * when the formula has no value (CEI with nothing collectible in its period).
 */
export function evaluatePreset(formula: PresetFormula, facts: PresetFacts, day: Day): PresetValue | null {
  const base = { preset: formula, as_of: day, receivable_invoices: facts.invoices.length };
  switch (formula) {
    case 'overdue_amount':
    case 'overdue_invoice_count': {
      const overdue = overdueAt(facts.invoices, day);
      return {
        value: formula === 'overdue_amount' ? overdue.amountCents : overdue.count,
        metadata: {
          ...base,
          overdue_amount_cents: overdue.amountCents,
          overdue_invoice_count: overdue.count,
        },
      };
    }
    case 'aging_current':
    case 'aging_1_30':
    case 'aging_31_60':
    case 'aging_61_90':
    case 'aging_over_90': {
      const bucket = AGING_OF[formula]!;
      const aging = agingAt(facts.invoices, day);
      return {
        value: aging.cents[bucket],
        metadata: {
          ...base,
          bucket,
          invoice_count: aging.counts[bucket],
          receivables_total_cents: aging.totalCents,
        },
      };
    }
    case 'dso_countback': {
      let balance = 0;
      for (const invoice of facts.invoices) balance += outstandingCents(invoice, day);
      const dso = dsoCountback(balance, facts.salesByMonth, day);
      return {
        value: dso.days,
        metadata: {
          ...base,
          receivables_balance_cents: balance,
          fully_covered: dso.fullyCovered,
          months: dso.steps,
        },
      };
    }
    case 'collection_effectiveness_index': {
      const inputs = ceiInputs(facts.invoices, day);
      const cei = collectionEffectivenessIndex(inputs);
      if (cei === null) return null;
      return { value: cei, metadata: { ...base, ...inputs } };
    }
  }
}
