import { sql } from 'drizzle-orm';
import {
  boolean,
  date,
  doublePrecision,
  foreignKey,
  index,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';

export const METRIC_CONTEXT_TYPES = ['ORGANIZATION', 'PARTY', 'USER'] as const;
export const METRIC_VALUE_TYPES = ['currency', 'percentage', 'days', 'count', 'ratio'] as const;
export const METRIC_STORAGE_UNITS = ['raw', 'cents'] as const;
export const METRIC_PERIODS = ['as_of_date', 'trailing_30_days', 'calendar_month', 'month_to_date'] as const;
export const METRIC_TIME_UNITS = ['day', 'month', 'year'] as const;

/** Metric definitions (interface 2.14); `uid` is the snake_case name, unique within an organization. */
export const metricDefinitions = pgTable(
  'metric_definitions',
  {
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    uid: text('uid').notNull(),
    name: text('name').notNull(),
    contextType: text('context_type', { enum: METRIC_CONTEXT_TYPES }).notNull().default('ORGANIZATION'),
    description: text('description').notNull().default(''),
    formula: text('formula').notNull().default(''),
    valueType: text('value_type', { enum: METRIC_VALUE_TYPES }).notNull().default('count'),
    storageUnit: text('storage_unit', { enum: METRIC_STORAGE_UNITS }).notNull().default('raw'),
    isSnapshot: boolean('is_snapshot').notNull().default(false),
    periodDefinition: text('period_definition', { enum: METRIC_PERIODS }).notNull().default('as_of_date'),
    isActive: boolean('is_active').notNull().default(true),
    /** Installed by `remit metrics presets`: the daily job computes its values. */
    preset: text('preset'),
    ...timestamps,
  },
  (t) => [
    primaryKey({ name: 'metric_definitions_pkey', columns: [t.organizationUid, t.uid] }),
    index('metric_definitions_org_created_idx').on(t.organizationUid, t.createdAt, t.uid),
  ],
);

/** Metric values (interface 2.15): one number per entity, metric, time unit and date. */
export const metricValues = pgTable(
  'metric_values',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    metricUid: text('metric_uid').notNull(),
    contextType: text('context_type', { enum: METRIC_CONTEXT_TYPES }).notNull(),
    entityUid: uuid('entity_uid').notNull(),
    timeUnit: text('time_unit', { enum: METRIC_TIME_UNITS }).notNull(),
    timezone: text('timezone').notNull().default('UTC'),
    metricDate: date('metric_date', { mode: 'string' }).notNull(),
    value: doublePrecision('value').notNull(),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    ...timestamps,
  },
  (t) => [
    foreignKey({
      columns: [t.organizationUid, t.metricUid],
      foreignColumns: [metricDefinitions.organizationUid, metricDefinitions.uid],
      name: 'metric_values_definition_fk',
    }),
    // The interface's duplicate rule as an index, so concurrent posts still leave one row (and one 409).
    uniqueIndex('metric_values_point_key').on(
      t.organizationUid,
      t.entityUid,
      t.metricUid,
      t.timeUnit,
      t.metricDate,
    ),
    index('metric_values_series_idx').on(
      t.organizationUid,
      t.metricUid,
      t.entityUid,
      t.timeUnit,
      t.metricDate,
    ),
  ],
);

/**
 * Per organization, when its preset values need work (migration 0033, docs/metrics.md): a refresh
 * asked for by an invoice or payment change and not yet done, and the last day the daily job computed
 * after it had ended (the next run fills every later day).
 */
export const metricPresetStates = pgTable('metric_preset_states', {
  organizationUid: uuid('organization_uid')
    .primaryKey()
    .references(() => organizations.uid, { onDelete: 'cascade' }),
  refreshRequestedAt: timestamp('refresh_requested_at', { withTimezone: true }),
  computedThrough: date('computed_through', { mode: 'string' }),
  ...timestamps,
});
