import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { requireAdmin, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound, type FieldError } from '../../platform/http/errors.ts';
import type { Jobs } from '../../platform/jobs/jobs.ts';
import {
  addDays,
  daysBetween,
  DSO_MAX_PRIOR_MONTHS,
  monthOf,
  monthsBefore,
  type Day,
} from './metric-formulas.ts';
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
 * Computes every active preset of the organization (or only those of `metricUids`) as of the end of
 * `day` (UTC) and stores the values (time unit `day`, time zone UTC), replacing values already stored
 * for that day. ORGANIZATION presets get one value for the organization, PARTY presets one per client
 * billed by that day.
 */
export async function computePresetValues(
  db: Db,
  organizationUid: string,
  day: Day,
  metricUids?: readonly string[],
): Promise<ComputeResult> {
  const result: ComputeResult = {
    organization_uid: organizationUid,
    metric_date: day,
    values_written: 0,
    skipped: [],
  };
  const definitions = (await repo.listActivePresetDefinitions(db, organizationUid)).filter(
    (d): d is typeof d & { preset: PresetFormula } =>
      isPresetFormula(d.preset) &&
      (d.contextType === 'ORGANIZATION' || d.contextType === 'PARTY') &&
      (metricUids === undefined || metricUids.includes(d.uid)),
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

/** The UTC day of an instant. */
export function utcDayOf(instant: Date): Day {
  return instant.toISOString().slice(0, 10);
}

export const METRIC_PRESETS_QUEUE = 'remit.metrics.presets';
/** Daily at 00:15 UTC, for the day that just ended (and any day before it that was missed). */
export const METRIC_PRESETS_CRON = '15 0 * * *';
/** The daily job fills at most this many days per organization and run (the newest ones). */
export const MAX_BACKFILL_DAYS = 400;

/**
 * The days the daily job computes for an organization when `yesterday` just ended: every day after the
 * last one it computed (`computed_through`), or, before it ever ran with this mark, from the latest
 * day with a stored preset value (recomputed: it may have been computed before the day ended), at
 * most MAX_BACKFILL_DAYS, up to `yesterday`. An organization with nothing stored gets `yesterday`.
 */
export async function daysToBackfill(db: Db, organizationUid: string, yesterday: Day): Promise<Day[]> {
  const state = await repo.findPresetState(db, organizationUid);
  let start = state?.computedThrough
    ? addDays(state.computedThrough, 1)
    : ((await repo.latestPresetValueDay(db, organizationUid, addDays(yesterday, 1))) ?? yesterday);
  const floor = addDays(yesterday, 1 - MAX_BACKFILL_DAYS);
  if (start < floor) start = floor;
  const days: Day[] = [];
  for (let day = start; day <= yesterday; day = addDays(day, 1)) days.push(day);
  return days;
}

export interface DailyJobSummary {
  /** The day that just ended. */
  metric_date: Day;
  organizations: number;
  /** Organization-days computed (more than `organizations` when days were filled in). */
  days_computed: number;
  values_written: number;
  failed: number;
}

/**
 * The daily job's work: for every organization with active presets, each on its own, the day that
 * just ended and every day before it the job missed (the server was down at 00:15). Each day computed
 * moves the organization's mark, so a failure half-way resumes where it stopped. One organization
 * failing stops no other.
 */
export async function runDailyPresetJob(
  db: Db,
  now: Date,
  onError: (organizationUid: string, error: unknown) => void,
): Promise<DailyJobSummary> {
  const yesterday = addDays(utcDayOf(now), -1);
  const summary: DailyJobSummary = {
    metric_date: yesterday,
    organizations: 0,
    days_computed: 0,
    values_written: 0,
    failed: 0,
  };
  for (const organizationUid of await repo.organizationsWithActivePresets(db)) {
    try {
      for (const day of await daysToBackfill(db, organizationUid, yesterday)) {
        const result = await computePresetValues(db, organizationUid, day);
        await repo.advanceComputedThrough(db, organizationUid, day);
        summary.days_computed += 1;
        summary.values_written += result.values_written;
      }
      summary.organizations += 1;
    } catch (error) {
      summary.failed += 1;
      onError(organizationUid, error);
    }
  }
  return summary;
}

// ---- kept fresh after changes ----

export const METRIC_REFRESH_QUEUE = 'remit.metrics.refresh';
/** How long after the first change of a burst its refresh runs: every change in between joins it. */
export const REFRESH_DELAY_SECONDS = 30;
/** A refresh asked for longer ago than this is presumed lost (its job failed for good): asked again. */
const REFRESH_LOST_AFTER_SECONDS = 600;

/**
 * The one call an invoice or payment write makes, inside its transaction, when receivables changed:
 * the organization's preset values for today are recomputed about REFRESH_DELAY_SECONDS later. The
 * first change after a refresh asks for one and enqueues its job (both commit with the change); every
 * change until that job starts finds the request pending and only share-locks it (one indexed read),
 * so a burst of 1,000 changes makes one recompute, and the refresh reads the invoices only after
 * every change that relied on it has committed (metrics.repository.ts, holdPendingRefresh).
 */
export async function markMetricsStale(tx: DbOrTx, jobs: Jobs, organizationUid: string): Promise<void> {
  if (await repo.holdPendingRefresh(tx, organizationUid, REFRESH_LOST_AFTER_SECONDS)) return;
  if (!(await repo.requestRefresh(tx, organizationUid, REFRESH_LOST_AFTER_SECONDS))) return;
  await jobs.enqueue(
    tx,
    METRIC_REFRESH_QUEUE,
    { organization_uid: organizationUid },
    {
      startAfter: new Date(Date.now() + REFRESH_DELAY_SECONDS * 1000),
      retryLimit: 3,
      retryDelaySeconds: 30,
    },
  );
}

/**
 * The refresh job: clears the request first (so a change from now on asks for another refresh), then
 * recomputes the organization's presets as of today (UTC, so far).
 */
export async function refreshPresetValues(
  db: Db,
  organizationUid: string,
  now: Date,
): Promise<ComputeResult> {
  await repo.clearRefreshRequest(db, organizationUid);
  return computePresetValues(db, organizationUid, utcDayOf(now));
}

// ---- computed when first asked for ----

/** Computations under way in this process, by organization and day: concurrent readers share one. */
const computing = new Map<string, Promise<ComputeResult>>();

/**
 * Before a series of an active preset is read: when the last day the read asks for (its `to`, or
 * today) has no value yet, the organization's presets are computed for that day first, in the
 * request (one day: ~40 ms on PostgreSQL, ~100 ms embedded, for 5,000 invoices). Earlier missing
 * days are the daily job's backfill, or POST /api/metrics/compute.
 */
export async function ensurePresetDay(
  db: Db,
  organizationUid: string,
  definition: Pick<repo.DefinitionRow, 'uid' | 'preset' | 'isActive' | 'contextType'>,
  range: { from?: Day | undefined; to?: Day | undefined; timeUnit?: string | undefined },
  now: Date,
): Promise<void> {
  if (!definition.isActive || !isPresetFormula(definition.preset)) return;
  if (definition.contextType === 'USER') return;
  if (range.timeUnit !== undefined && range.timeUnit !== 'day') return;
  const today = utcDayOf(now);
  const day = range.to !== undefined && range.to < today ? range.to : today;
  if (range.from !== undefined && range.from > day) return;
  const entityUid = definition.contextType === 'ORGANIZATION' ? organizationUid : undefined;
  if (await repo.hasDayValue(db, organizationUid, definition.uid, day, entityUid)) return;
  const key = `${organizationUid}|${day}`;
  let pending = computing.get(key);
  if (!pending) {
    pending = computePresetValues(db, organizationUid, day).finally(() => computing.delete(key));
    computing.set(key, pending);
  }
  await pending;
}

// ---- POST /api/metrics/compute ----

/** At most this many days per call: each day is a computation in the request. */
export const MAX_COMPUTE_DAYS = 31;

export interface ComputeRequest {
  metric_uids?: string[] | undefined;
  from?: Day | undefined;
  to?: Day | undefined;
}

export interface ComputeRangeResult {
  organization_uid: string;
  from: Day;
  to: Day;
  /** The presets computed: those asked for, or every active preset of the organization. */
  metric_uids: string[];
  values_written: number;
  days: Omit<ComputeResult, 'organization_uid'>[];
}

const invalidField = (field: string, message: string) =>
  new AppError('validation_failed', `${field} ${message}`, [{ field, message }]);

/**
 * An admin's explicit computation (a backfill when given a range): the presets asked for (default:
 * every active one) for every day of `from`…`to` (default: today; `from` alone runs to today, `to`
 * alone is that one day), each day as of its end, replacing what was stored for it.
 */
export async function computePresetRange(
  db: Db,
  ctx: RequestContext,
  body: ComputeRequest,
  now: Date,
): Promise<ComputeRangeResult> {
  requireAdmin(ctx);
  const organizationUid = ctx.organizationUid;
  const today = utcDayOf(now);
  const to = body.to ?? today;
  const from = body.from ?? to;
  const notBegun = `must not be after today (${today}, UTC): that day has not begun`;
  if (to > today) throw invalidField('to', notBegun);
  if (from > today) throw invalidField('from', notBegun);
  if (from > to) throw invalidField('from', 'must not be after to');
  const span = daysBetween(from, to) + 1;
  if (span > MAX_COMPUTE_DAYS) {
    throw invalidField(
      'from',
      `the range spans ${span} days; at most ${MAX_COMPUTE_DAYS} per call (compute a longer one in parts)`,
    );
  }
  const active = await repo.listActivePresetDefinitions(db, organizationUid);
  let metricUids = active.filter((d) => isPresetFormula(d.preset)).map((d) => d.uid);
  if (body.metric_uids !== undefined) {
    const known = new Map(
      (await repo.findDefinitionsByUids(db, organizationUid, body.metric_uids)).map((d) => [d.uid, d]),
    );
    const errors: FieldError[] = [];
    body.metric_uids.forEach((uid, index) => {
      const definition = known.get(uid);
      const field = `metric_uids[${index}]`;
      if (!definition) errors.push({ field, message: 'is not a metric of this organization' });
      else if (!isPresetFormula(definition.preset)) {
        errors.push({ field, message: 'is not a preset metric: its values are posted, not computed' });
      } else if (!definition.isActive) errors.push({ field, message: 'is inactive' });
    });
    if (errors.length > 0) {
      throw new AppError('validation_failed', 'metric_uids names metrics that cannot be computed', errors);
    }
    metricUids = [...body.metric_uids];
  }
  const result: ComputeRangeResult = {
    organization_uid: organizationUid,
    from,
    to,
    metric_uids: metricUids,
    values_written: 0,
    days: [],
  };
  if (metricUids.length === 0) return result;
  for (let day = from; day <= to; day = addDays(day, 1)) {
    const { organization_uid: _org, ...computed } = await computePresetValues(
      db,
      organizationUid,
      day,
      metricUids,
    );
    result.days.push(computed);
    result.values_written += computed.values_written;
  }
  return result;
}
