import { Type, type Static } from 'typebox';
import {
  DateTime,
  Envelope,
  literals,
  Nullable,
  PageMeta,
  pageQuery,
  Uuid,
} from '../../platform/http/schemas.ts';
import {
  METRIC_CONTEXT_TYPES,
  METRIC_PERIODS,
  METRIC_STORAGE_UNITS,
  METRIC_TIME_UNITS,
  METRIC_VALUE_TYPES,
} from './metrics.tables.ts';

/** snake_case: lower-case letters and digits in words joined by single underscores, starting with a letter. */
export const METRIC_UID_PATTERN = '^[a-z][a-z0-9]*(_[a-z0-9]+)*$';
export const MetricUid = Type.String({
  pattern: METRIC_UID_PATTERN,
  minLength: 1,
  maxLength: 100,
  description: 'snake_case, unique within the organization',
});
export const ContextType = literals(METRIC_CONTEXT_TYPES);
export const ValueType = literals(METRIC_VALUE_TYPES);
export const StorageUnit = literals(METRIC_STORAGE_UNITS);
export const PeriodDefinition = literals(METRIC_PERIODS);
export const TimeUnit = literals(METRIC_TIME_UNITS);
const DateOnly = Type.String({ format: 'date', description: 'YYYY-MM-DD' });
const JsonObject = Type.Record(Type.String(), Type.Unknown());

// ---- definitions (interface 2.14) ----

export const MetricDefinition = Type.Object(
  {
    uid: Type.String(),
    organization_uid: Uuid,
    name: Type.String(),
    context_type: ContextType,
    description: Type.String(),
    formula: Type.String(),
    value_type: ValueType,
    storage_unit: StorageUnit,
    is_snapshot: Type.Boolean(),
    period_definition: PeriodDefinition,
    is_active: Type.Boolean(),
    preset: Nullable(
      Type.String({ description: 'the preset formula the daily job computes; null: values are posted' }),
    ),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'MetricDefinition' },
);

export const CreateMetricBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    uid: MetricUid,
    name: Type.String({ minLength: 1, maxLength: 255 }),
    context_type: Type.Optional(ContextType),
    description: Type.Optional(Type.String({ maxLength: 10_000 })),
    formula: Type.Optional(Type.String({ maxLength: 10_000 })),
    value_type: Type.Optional(ValueType),
    storage_unit: Type.Optional(StorageUnit),
    is_snapshot: Type.Optional(Type.Boolean()),
    period_definition: Type.Optional(PeriodDefinition),
    is_active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type CreateMetricBodyT = Static<typeof CreateMetricBody>;

/** Fixed at creation (interface 4.8). Accepted by the schema only so the service can name them in its 422. */
export const IMMUTABLE_DEFINITION_FIELDS = [
  'uid',
  'context_type',
  'value_type',
  'storage_unit',
  'is_snapshot',
  'period_definition',
] as const;

export const PatchMetricBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    description: Type.Optional(Type.String({ maxLength: 10_000 })),
    formula: Type.Optional(Type.String({ maxLength: 10_000 })),
    is_active: Type.Optional(Type.Boolean()),
    ...Object.fromEntries(
      IMMUTABLE_DEFINITION_FIELDS.map((f) => [
        f,
        Type.Optional(Type.Unknown({ description: 'immutable: 422' })),
      ]),
    ),
  },
  { additionalProperties: false },
);
export type PatchMetricBodyT = {
  name?: string | undefined;
  description?: string | undefined;
  formula?: string | undefined;
  is_active?: boolean | undefined;
} & Record<string, unknown>;

export const OrganizationQuery = Type.Object({ organization_uid: Type.Optional(Uuid) });

export const ListMetricsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  context_type: Type.Optional(ContextType),
  is_active: Type.Optional(Type.Boolean()),
  ...pageQuery(25),
});

export const MetricUidParams = Type.Object({ metric_uid: MetricUid });
export const MetricEnvelope = Envelope(Type.Ref('MetricDefinition'));
export const MetricListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('MetricDefinition')), _meta: PageMeta }),
);

// ---- values (interface 2.15) ----

export const MetricValue = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    metric_uid: Type.String(),
    metric_name: Type.String(),
    period_definition: PeriodDefinition,
    context_type: ContextType,
    entity_uid: Uuid,
    time_unit: TimeUnit,
    timezone: Type.String({ description: 'IANA time zone name' }),
    metric_date: DateOnly,
    storage_unit: StorageUnit,
    value_type: ValueType,
    value: Type.Number(),
    created_at: DateTime,
    updated_at: DateTime,
    _metadata: JsonObject,
  },
  { $id: 'MetricValue' },
);

export const ValuePathParams = Type.Object({ context_type: ContextType, entity_uid: Uuid });

export const CreateValueBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    metric_uid: Type.String({ minLength: 1, maxLength: 100 }),
    time_unit: Type.Optional(TimeUnit),
    metric_date: DateOnly,
    value: Type.Number(),
    timezone: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'IANA name; default UTC' }),
    ),
    _metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);
export type CreateValueBodyT = Static<typeof CreateValueBody>;

/** Fixed at creation (interface 4.8). Accepted by the schema only so the service can name them in its 422. */
export const IMMUTABLE_VALUE_FIELDS = [
  'metric_uid',
  'entity_uid',
  'context_type',
  'time_unit',
  'metric_date',
] as const;

export const PatchValueBody = Type.Object(
  {
    value: Type.Optional(Type.Number()),
    _metadata: Type.Optional(JsonObject),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    ...Object.fromEntries(
      IMMUTABLE_VALUE_FIELDS.map((f) => [f, Type.Optional(Type.Unknown({ description: 'immutable: 422' }))]),
    ),
  },
  { additionalProperties: false },
);
export type PatchValueBodyT = {
  value?: number | undefined;
  _metadata?: Record<string, unknown> | undefined;
  timezone?: string | undefined;
} & Record<string, unknown>;

export const ValueUidParams = Type.Object({ value_uid: Uuid });

export const ListValuesQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  entity_uid: Type.Optional(Uuid),
  time_unit: Type.Optional(TimeUnit),
  from: Type.Optional(DateOnly),
  to: Type.Optional(DateOnly),
  ...pageQuery(100, 1000),
});

export const ValueEnvelope = Envelope(Type.Ref('MetricValue'));
export const ValueListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('MetricValue')), _meta: PageMeta }),
);

// ---- computing preset values (docs/metrics.md, "Computing them") ----

export const ComputeMetricsBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    metric_uids: Type.Optional(
      Type.Array(MetricUid, {
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description: 'active preset metrics to compute; default: every active preset',
      }),
    ),
    from: Type.Optional(Type.String({ format: 'date', description: 'first day (UTC); default: `to`' })),
    to: Type.Optional(
      Type.String({ format: 'date', description: 'last day (UTC), not after today; default: today' }),
    ),
  },
  { additionalProperties: false },
);
export type ComputeMetricsBodyT = Static<typeof ComputeMetricsBody>;

const ComputedDay = Type.Object({
  metric_date: DateOnly,
  values_written: Type.Integer({ description: 'values inserted or replaced for that day' }),
  skipped: Type.Array(Type.Object({ metric_uid: Type.String(), entity_uid: Uuid, reason: Type.String() }), {
    description: 'values the formula could not give (CEI with nothing collectible)',
  }),
});

export const ComputeMetricsEnvelope = Envelope(
  Type.Object({
    organization_uid: Uuid,
    from: DateOnly,
    to: DateOnly,
    metric_uids: Type.Array(Type.String(), { description: 'the presets computed' }),
    values_written: Type.Integer(),
    days: Type.Array(ComputedDay),
  }),
);
