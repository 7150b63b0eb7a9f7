import type { Db } from '../../platform/db/client.ts';
import { isUniqueViolation } from '../../platform/db/errors.ts';
import { memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { AppError, badParameter, notFound, type FieldError } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { ensurePresetDay } from './metric-presets.service.ts';
import * as repo from './metrics.repository.ts';
import {
  IMMUTABLE_DEFINITION_FIELDS,
  IMMUTABLE_VALUE_FIELDS,
  type CreateMetricBodyT,
  type CreateValueBodyT,
  type PatchMetricBodyT,
  type PatchValueBodyT,
} from './metrics.schemas.ts';

/**
 * What an invoice or payment write calls in its transaction when receivables changed: the
 * organization's preset values are recomputed shortly after (docs/metrics.md, "Kept fresh").
 */
export { markMetricsStale } from './metric-presets.service.ts';

export type ContextType = repo.DefinitionRow['contextType'];
type TimeUnit = repo.ValueRow['timeUnit'];

/** A path segment of the values routes (`/api/metrics/values/…`), so never a metric uid. */
const RESERVED_UIDS = new Set(['values']);

export function toDefinitionView(row: repo.DefinitionRow) {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    name: row.name,
    context_type: row.contextType,
    description: row.description,
    formula: row.formula,
    value_type: row.valueType,
    storage_unit: row.storageUnit,
    is_snapshot: row.isSnapshot,
    period_definition: row.periodDefinition,
    is_active: row.isActive,
    preset: row.preset,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}
export type DefinitionView = ReturnType<typeof toDefinitionView>;

export function toValueView({ value, definition }: repo.ValueWithDefinition) {
  return {
    uid: value.uid,
    organization_uid: value.organizationUid,
    metric_uid: value.metricUid,
    metric_name: definition.name,
    period_definition: definition.periodDefinition,
    context_type: value.contextType,
    entity_uid: value.entityUid,
    time_unit: value.timeUnit,
    timezone: value.timezone,
    metric_date: value.metricDate,
    storage_unit: definition.storageUnit,
    value_type: definition.valueType,
    value: value.value,
    created_at: value.createdAt,
    updated_at: value.updatedAt,
    _metadata: value.metadata,
  };
}
export type ValueView = ReturnType<typeof toValueView>;

/**
 * Whether `name` is an IANA time zone name the runtime knows (`UTC`, `America/Bogota`). Offsets such as
 * `+05:00` are refused: they are not names, and they follow no daylight-saving rules.
 */
export function isIanaTimeZone(name: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The time zone as sent (trimmed), once it is known to be an IANA name; 422 otherwise. */
function timeZoneOf(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const trimmed = name.trim();
  if (!isIanaTimeZone(trimmed)) {
    throw new AppError('validation_failed', `"${name}" is not an IANA time zone name`, [
      { field: 'timezone', message: 'must be an IANA time zone name such as UTC or America/Bogota' },
    ]);
  }
  return trimmed;
}

/** 422 naming every immutable field the body carries; nothing is read or written before it. */
function refuseImmutable(body: Record<string, unknown>, fields: readonly string[], what: string): void {
  const errors: FieldError[] = fields
    .filter((f) => body[f] !== undefined)
    .map((field) => ({ field, message: `is immutable: a ${what} keeps it from creation` }));
  if (errors.length > 0) {
    throw new AppError(
      'validation_failed',
      `Cannot change ${errors.map((e) => e.field).join(', ')} of a ${what}`,
      errors,
    );
  }
}

// ---- definitions ----

const duplicateUid = (uid: string) =>
  new AppError('already_exists', `A metric with uid "${uid}" already exists in this organization`, [
    { field: 'uid', message: 'already exists in this organization' },
  ]);

export async function createMetric(
  db: Db,
  ctx: RequestContext,
  body: CreateMetricBodyT,
): Promise<DefinitionView> {
  if (RESERVED_UIDS.has(body.uid)) {
    throw new AppError('validation_failed', `"${body.uid}" is reserved`, [
      { field: 'uid', message: 'is reserved (a path segment of the metrics routes)' },
    ]);
  }
  try {
    const row = await repo.insertDefinition(db, {
      organizationUid: ctx.organizationUid,
      uid: body.uid,
      name: body.name.trim(),
      contextType: body.context_type ?? 'ORGANIZATION',
      description: body.description ?? '',
      formula: body.formula ?? '',
      valueType: body.value_type ?? 'count',
      storageUnit: body.storage_unit ?? 'raw',
      isSnapshot: body.is_snapshot ?? false,
      periodDefinition: body.period_definition ?? 'as_of_date',
      isActive: body.is_active ?? true,
    });
    return toDefinitionView(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateUid(body.uid);
    throw error;
  }
}

/** A definition of the call's organization; any other (or none) is 404. */
export async function getMetric(db: Db, ctx: RequestContext, uid: string): Promise<DefinitionView> {
  const row = await repo.findDefinition(db, ctx.organizationUid, uid);
  if (!row) throw notFound('Metric');
  return toDefinitionView(row);
}

export async function patchMetric(
  db: Db,
  ctx: RequestContext,
  uid: string,
  body: PatchMetricBodyT,
): Promise<DefinitionView> {
  refuseImmutable(body, IMMUTABLE_DEFINITION_FIELDS, 'metric definition');
  const values = {
    ...(body.name !== undefined ? { name: body.name.trim() } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.formula !== undefined ? { formula: body.formula } : {}),
    ...(body.is_active !== undefined ? { isActive: body.is_active } : {}),
  };
  const row =
    Object.keys(values).length > 0
      ? await repo.updateDefinition(db, ctx.organizationUid, uid, values)
      : await repo.findDefinition(db, ctx.organizationUid, uid);
  if (!row) throw notFound('Metric');
  return toDefinitionView(row);
}

export async function listMetrics(
  db: Db,
  ctx: RequestContext,
  filters: { contextType?: ContextType | undefined; isActive?: boolean | undefined },
  page: PageRequest,
) {
  const { rows, total } = await repo.listDefinitions(db, ctx.organizationUid, {
    ...filters,
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map(toDefinitionView), total };
}

// ---- values ----

const ENTITY_NAMES: Record<ContextType, string> = {
  ORGANIZATION: 'Organization',
  PARTY: 'Party',
  USER: 'User',
};

/**
 * Interface 4.8: the metric must be one of the organization's (a body that names an unknown metric is a
 * validation problem, 422, as an unknown SKU is), active, of the path's context type; the entity must
 * exist in the organization (404 otherwise, as for any uid the caller cannot see); one row per
 * (entity, metric, time unit, date), held by a unique index so concurrent posts leave one row.
 */
/** The entity a value is recorded for, in the call's organization (else 404): checked before the body. */
export async function valueEntityExists(
  db: Db,
  ctx: RequestContext,
  contextType: ContextType,
  entityUid: string,
): Promise<void> {
  if (!(await repo.entityExists(db, ctx.organizationUid, contextType, entityUid))) {
    throw notFound(ENTITY_NAMES[contextType]);
  }
}

/** A value of any organization the caller belongs to (else 404): checked before the body. */
export async function valueExists(db: Db, ctx: RequestContext, uid: string): Promise<void> {
  if (!(await repo.findValue(db, memberOrganizationUids(ctx), uid))) throw notFound('Metric value');
}

export async function createValue(
  db: Db,
  ctx: RequestContext,
  contextType: ContextType,
  entityUid: string,
  body: CreateValueBodyT,
): Promise<ValueView> {
  // The entity the path names first: another organization's is 404 whatever the body says.
  await valueEntityExists(db, ctx, contextType, entityUid);
  const definition = await repo.findDefinition(db, ctx.organizationUid, body.metric_uid);
  if (!definition) {
    throw new AppError('validation_failed', `No metric "${body.metric_uid}" in this organization`, [
      { field: 'metric_uid', message: 'does not exist in this organization' },
    ]);
  }
  if (!definition.isActive) {
    throw new AppError(
      'validation_failed',
      `Metric "${definition.uid}" is inactive and takes no new values`,
      [{ field: 'metric_uid', message: 'is inactive' }],
    );
  }
  if (definition.contextType !== contextType) {
    throw new AppError(
      'validation_failed',
      `Metric "${definition.uid}" has context type ${definition.contextType}, not ${contextType}`,
      [{ field: 'context_type', message: `must be ${definition.contextType}, the metric's context type` }],
    );
  }
  const timezone = timeZoneOf(body.timezone) ?? 'UTC';
  const timeUnit = body.time_unit ?? 'day';
  try {
    const value = await repo.insertValue(db, {
      organizationUid: ctx.organizationUid,
      metricUid: definition.uid,
      contextType,
      entityUid,
      timeUnit,
      timezone,
      metricDate: body.metric_date,
      value: body.value,
      metadata: body._metadata ?? {},
    });
    return toValueView({ value, definition });
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new AppError(
        'already_exists',
        `Metric "${definition.uid}" already has a ${timeUnit} value for this entity on ${body.metric_date}`,
        [{ field: 'metric_date', message: 'already has a value for this entity, metric and time unit' }],
      );
    }
    throw error;
  }
}

/** A value of any organization the caller belongs to; only `value`, `_metadata` and `timezone` change. */
export async function patchValue(
  db: Db,
  ctx: RequestContext,
  uid: string,
  body: PatchValueBodyT,
): Promise<ValueView> {
  refuseImmutable(body, IMMUTABLE_VALUE_FIELDS, 'metric value');
  const timezone = timeZoneOf(body.timezone);
  return db.transaction(async (tx) => {
    const found = await repo.findValue(tx, memberOrganizationUids(ctx), uid);
    if (!found) throw notFound('Metric value');
    const values = {
      ...(body.value !== undefined ? { value: body.value } : {}),
      ...(body._metadata !== undefined ? { metadata: body._metadata } : {}),
      ...(timezone !== undefined ? { timezone } : {}),
    };
    if (Object.keys(values).length === 0) return toValueView(found);
    await repo.updateValue(tx, found.value.organizationUid, uid, values);
    return toValueView((await repo.findValue(tx, [found.value.organizationUid], uid))!);
  });
}

export async function listValues(
  db: Db,
  ctx: RequestContext,
  metricUid: string,
  filters: {
    entityUid?: string | undefined;
    timeUnit?: TimeUnit | undefined;
    from?: string | undefined;
    to?: string | undefined;
  },
  page: PageRequest,
) {
  if (filters.from && filters.to && filters.from > filters.to) {
    throw badParameter('from', 'from must not be after to');
  }
  const definition = await repo.findDefinition(db, ctx.organizationUid, metricUid);
  if (!definition) throw notFound('Metric');
  // A preset's value for the day asked about is computed now when nothing computed it yet (a new
  // organization sees its numbers at once, not after the next 00:15).
  await ensurePresetDay(db, ctx.organizationUid, definition, filters, new Date());
  const { rows, total } = await repo.listValues(db, ctx.organizationUid, metricUid, {
    ...filters,
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map(toValueView), total };
}
