import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { computePresetRange } from './metric-presets.service.ts';
import {
  ComputeMetricsBody,
  ComputeMetricsEnvelope,
  CreateMetricBody,
  CreateValueBody,
  ListMetricsQuery,
  ListValuesQuery,
  MetricDefinition,
  MetricEnvelope,
  MetricListEnvelope,
  MetricUidParams,
  MetricValue,
  OrganizationQuery,
  PatchMetricBody,
  PatchValueBody,
  ValueEnvelope,
  ValueListEnvelope,
  ValuePathParams,
  ValueUidParams,
} from './metrics.schemas.ts';
import * as service from './metrics.service.ts';
import type { ContextType } from './metrics.service.ts';

export async function metricRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(MetricDefinition);
  app.addSchema(MetricValue);
  const tags = ['Metrics'];

  app.post(
    '/api/metrics',
    {
      schema: {
        operationId: 'createMetric',
        tags,
        summary: 'Create a metric definition (uid unique in the organization → 409)',
        body: CreateMetricBody,
        response: { 200: MetricEnvelope, ...errorResponses },
      },
      config: { scope: 'metrics:write', errors: ['already_exists'] },
    },
    async (request) =>
      envelope(
        await service.createMetric(db, request.tenant(request.body.organization_uid), request.body),
        'Metric created',
      ),
  );

  // A static path beside `/api/metrics/:metric_uid`, which has no POST: no clash (a metric may even be
  // called `compute`: GET and PATCH still reach it).
  app.post(
    '/api/metrics/compute',
    {
      schema: {
        operationId: 'computeMetrics',
        tags,
        summary:
          'Compute preset receivables metrics now (admins): today, or every day of from…to (a backfill, at most 31 days)',
        body: ComputeMetricsBody,
        response: { 200: ComputeMetricsEnvelope, ...errorResponses },
      },
      config: { scope: 'metrics:write', errors: ['forbidden'] },
    },
    async (request) =>
      envelope(
        await computePresetRange(db, request.tenant(request.body.organization_uid), request.body, new Date()),
        'Metrics computed',
      ),
  );

  app.get(
    '/api/metrics',
    {
      schema: {
        operationId: 'listMetrics',
        tags,
        summary: 'List the metric definitions of the organization, oldest first',
        querystring: ListMetricsQuery,
        response: { 200: MetricListEnvelope, ...errorResponses },
      },
      config: { scope: 'metrics:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listMetrics(
        db,
        ctx,
        { contextType: request.query.context_type, isActive: request.query.is_active },
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Metrics');
    },
  );

  app.get(
    '/api/metrics/:metric_uid',
    {
      schema: {
        operationId: 'getMetric',
        tags,
        summary: 'Get a metric definition',
        params: MetricUidParams,
        querystring: OrganizationQuery,
        response: { 200: MetricEnvelope, ...errorResponses },
      },
      config: { scope: 'metrics:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.getMetric(
          db,
          request.tenant(request.query.organization_uid),
          request.params.metric_uid,
        ),
        'Metric',
      ),
  );

  app.patch(
    '/api/metrics/:metric_uid',
    {
      schema: {
        operationId: 'updateMetric',
        tags,
        summary: 'Update name, description, formula or is_active (any other field → 422)',
        params: MetricUidParams,
        querystring: OrganizationQuery,
        body: PatchMetricBody,
        response: { 200: MetricEnvelope, ...errorResponses },
      },
      config: {
        scope: 'metrics:write',
        errors: ['not_found'],
        exists: (ctx, { metric_uid }) => service.getMetric(db, ctx, metric_uid!),
      },
    },
    async (request) =>
      envelope(
        await service.patchMetric(
          db,
          request.tenant(request.query.organization_uid),
          request.params.metric_uid,
          request.body,
        ),
        'Metric updated',
      ),
  );

  app.post(
    '/api/metrics/values/:context_type/:entity_uid',
    {
      schema: {
        operationId: 'recordMetricValue',
        tags,
        summary: 'Record one value of a metric for an entity (same entity, metric, time unit and date → 409)',
        params: ValuePathParams,
        body: CreateValueBody,
        response: { 200: ValueEnvelope, ...errorResponses },
      },
      config: {
        scope: 'metrics:write',
        errors: ['not_found', 'already_exists'],
        exists: (ctx, { context_type, entity_uid }) =>
          service.valueEntityExists(db, ctx, context_type as ContextType, entity_uid!),
      },
    },
    async (request) =>
      envelope(
        await service.createValue(
          db,
          request.tenant(request.body.organization_uid),
          request.params.context_type,
          request.params.entity_uid,
          request.body,
        ),
        'Metric value created',
      ),
  );

  app.patch(
    '/api/metrics/values/:value_uid',
    {
      schema: {
        operationId: 'updateMetricValue',
        tags,
        summary: 'Update value, _metadata or timezone of a metric value (any other field → 422)',
        params: ValueUidParams,
        body: PatchValueBody,
        response: { 200: ValueEnvelope, ...errorResponses },
      },
      config: {
        scope: 'metrics:write',
        errors: ['not_found'],
        exists: (ctx, { value_uid }) => service.valueExists(db, ctx, value_uid!),
      },
    },
    async (request) =>
      envelope(
        await service.patchValue(db, request.tenant(), request.params.value_uid, request.body),
        'Metric value updated',
      ),
  );

  app.get(
    '/api/metrics/:metric_uid/values',
    {
      schema: {
        operationId: 'listMetricValues',
        tags,
        summary:
          'Read a series: the values of a metric by date, optionally for one entity, time unit and date range',
        params: MetricUidParams,
        querystring: ListValuesQuery,
        response: { 200: ValueListEnvelope, ...errorResponses },
      },
      config: { scope: 'metrics:read', errors: ['not_found'] },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 100);
      const { items, total } = await service.listValues(
        db,
        ctx,
        request.params.metric_uid,
        {
          entityUid: request.query.entity_uid,
          timeUnit: request.query.time_unit,
          from: request.query.from,
          to: request.query.to,
        },
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Metric values');
    },
  );
}
