import type { Db } from '../../platform/db/client.ts';
import { notFound } from '../../platform/http/errors.ts';
import { addDays, DSO_MAX_PRIOR_MONTHS, monthOf, monthsBefore, type Day } from './metric-formulas.ts';
import {
  evaluatePreset,
  isPresetFormula,
  PRESET_DEFINITIONS,
  type PresetFacts,
  type PresetFormula,
} from './metric-presets.ts';
import * as repo from './metrics.repository.ts';

export interface InstallPresetsResult {
  organization_uid: string;
  /** Added by this call. */
  installed: string[];
  /** Already there as presets (left as they are, edits included). */
  already_installed: string[];
  /** A definition of the organization's own holds the uid: left alone, and not computed. */
  conflicts: string[];
}

/**
 * `remit metrics presets` (and `remit init`): adds the preset receivables definitions an organization
 * does not have yet. Idempotent; never overwrites a definition, so edited names or deactivations stay.
 */
export async function installMetricPresets(db: Db, organizationUid: string): Promise<InstallPresetsResult> {
  return db.transaction(async (tx) => {
    if (!(await repo.organizationExists(tx, organizationUid))) throw notFound('Organization');
    const installed = await repo.insertDefinitionsIfAbsent(
      tx,
      PRESET_DEFINITIONS.map((p) => ({
        organizationUid,
        uid: p.uid,
        name: p.name,
        contextType: p.contextType,
        description: p.description,
        formula: p.formula,
        valueType: p.valueType,
        storageUnit: p.storageUnit,
        isSnapshot: true,
        periodDefinition: p.periodDefinition,
        isActive: true,
        preset: p.preset,
      })),
    );
    const fresh = new Set(installed);
    const others = PRESET_DEFINITIONS.filter((p) => !fresh.has(p.uid));
    const existing = new Map(
      (
        await repo.findDefinitionsByUids(
          tx,
          organizationUid,
          others.map((p) => p.uid),
        )
      ).map((d) => [d.uid, d]),
    );
    const alreadyInstalled: string[] = [];
    const conflicts: string[] = [];
    for (const p of others) {
      const row = existing.get(p.uid);
      if (row?.preset === p.preset && row.contextType === p.contextType) alreadyInstalled.push(p.uid);
      else conflicts.push(p.uid);
    }
    return {
      organization_uid: organizationUid,
      installed: PRESET_DEFINITIONS.filter((p) => fresh.has(p.uid)).map((p) => p.uid),
      already_installed: alreadyInstalled,
      conflicts,
    };
  });
}

export interface ComputeResult {
  organization_uid: string;
  metric_date: Day;
  /** Values written (inserted or replaced). */
  values_written: number;
  /** Values the formula could not give (CEI with nothing collectible in its period). */
  skipped: { metric_uid: string; entity_uid: string; reason: string }[];
}

function salesOf(
  rows: { clientPartyUid: string | null; month: string; salesCents: number }[],
  partyUid?: string,
): Record<string, number> {
  const sales: Record<string, number> = {};
  for (const r of rows) {
    if (partyUid !== undefined && r.clientPartyUid !== partyUid) continue;
    sales[r.month] = (sales[r.month] ?? 0) + r.salesCents;
  }
  return sales;
}

/**
 * Computes every active preset of the organization as of the end of `day` (UTC) and stores the values
 * (time unit `day`, time zone UTC), replacing values already stored for that day. ORGANIZATION presets
 * get one value for the organization, PARTY presets one per client billed by that day.
 */
export async function computePresetValues(db: Db, organizationUid: string, day: Day): Promise<ComputeResult> {
  const result: ComputeResult = {
    organization_uid: organizationUid,
    metric_date: day,
    values_written: 0,
    skipped: [],
  };
  const definitions = (await repo.listActivePresetDefinitions(db, organizationUid)).filter(
    (d): d is typeof d & { preset: PresetFormula } =>
      isPresetFormula(d.preset) && (d.contextType === 'ORGANIZATION' || d.contextType === 'PARTY'),
  );
  if (definitions.length === 0) {
    if (!(await repo.organizationExists(db, organizationUid))) throw notFound('Organization');
    return result;
  }
  const dayAfterEnd = addDays(day, 1);
  const invoices = await repo.loadReceivableInvoices(db, organizationUid, {
    endDay: day,
    dayAfterEnd,
    beginningDay: addDays(day, -30),
    dayAfterBeginning: addDays(day, -29),
  });
  const sales = await repo.loadMonthlySales(db, organizationUid, {
    fromDay: `${monthsBefore(monthOf(day), DSO_MAX_PRIOR_MONTHS)}-01`,
    dayAfterEnd,
  });

  const entities: { contextType: 'ORGANIZATION' | 'PARTY'; uid: string; facts: PresetFacts }[] = [];
  if (definitions.some((d) => d.contextType === 'ORGANIZATION')) {
    entities.push({
      contextType: 'ORGANIZATION',
      uid: organizationUid,
      facts: { invoices, salesByMonth: salesOf(sales) },
    });
  }
  if (definitions.some((d) => d.contextType === 'PARTY')) {
    const byClient = new Map<string, typeof invoices>();
    for (const invoice of invoices) {
      if (!invoice.clientPartyUid) continue;
      const list = byClient.get(invoice.clientPartyUid) ?? [];
      list.push(invoice);
      byClient.set(invoice.clientPartyUid, list);
    }
    for (const partyUid of await repo.listBilledClients(db, organizationUid, dayAfterEnd)) {
      entities.push({
        contextType: 'PARTY',
        uid: partyUid,
        facts: { invoices: byClient.get(partyUid) ?? [], salesByMonth: salesOf(sales, partyUid) },
      });
    }
  }

  const computedAt = new Date().toISOString();
  const rows: Parameters<typeof repo.upsertValues>[1] = [];
  for (const definition of definitions) {
    for (const entity of entities) {
      if (entity.contextType !== definition.contextType) continue;
      const computed = evaluatePreset(definition.preset, entity.facts, day);
      if (!computed) {
        result.skipped.push({
          metric_uid: definition.uid,
          entity_uid: entity.uid,
          reason: 'nothing was collectible in the period (the denominator is 0)',
        });
        continue;
      }
      rows.push({
        organizationUid,
        metricUid: definition.uid,
        contextType: definition.contextType,
        entityUid: entity.uid,
        timeUnit: 'day' as const,
        timezone: 'UTC',
        metricDate: day,
        value: computed.value,
        metadata: { ...computed.metadata, computed_at: computedAt },
      });
    }
  }
  result.values_written = await db.transaction((tx) => repo.upsertValues(tx, rows));
  return result;
}

/** The daily job: every organization with active presets, each on its own; one failure stops no other. */
export async function computeAllPresetValues(
  db: Db,
  day: Day,
  onError: (organizationUid: string, error: unknown) => void,
): Promise<{ metric_date: Day; organizations: number; values_written: number; failed: number }> {
  const summary = { metric_date: day, organizations: 0, values_written: 0, failed: 0 };
  for (const organizationUid of await repo.organizationsWithActivePresets(db)) {
    try {
      const result = await computePresetValues(db, organizationUid, day);
      summary.organizations += 1;
      summary.values_written += result.values_written;
    } catch (error) {
      summary.failed += 1;
      onError(organizationUid, error);
    }
  }
  return summary;
}

/** The UTC day of an instant. */
export function utcDayOf(instant: Date): Day {
  return instant.toISOString().slice(0, 10);
}

export const METRIC_PRESETS_QUEUE = 'remit.metrics.presets';
/** Daily at 00:15 UTC, for the day that just ended. */
export const METRIC_PRESETS_CRON = '15 0 * * *';

/** The daily job's work: every organization's presets as of the end of the previous UTC day. */
export async function runDailyPresetJob(
  db: Db,
  now: Date,
  onError: (organizationUid: string, error: unknown) => void,
) {
  return computeAllPresetValues(db, addDays(utcDayOf(now), -1), onError);
}
