import { envelope } from '../../platform/http/envelope.ts';
import { pageLinks, pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  CreateEndpointBody,
  DeliveryEnvelope,
  DeliveryListEnvelope,
  DeliveryParams,
  EndpointEnvelope,
  EndpointListEnvelope,
  EndpointParams,
  EndpointWithSecretEnvelope,
  Event,
  EventListEnvelope,
  ListDeliveriesQuery,
  ListEndpointsQuery,
  ListEventsQuery,
  OrganizationParams,
  UpdateEndpointBody,
  WebhookDelivery,
  WebhookEndpoint,
} from './webhooks.schemas.ts';
import * as service from './webhooks.service.ts';

/** Outbound webhooks, for admins (docs/webhooks.md), and the event list for callers that poll. */
export async function webhookRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const options = service.webhookOptionsOf(deps);
  app.addSchema(WebhookEndpoint);
  app.addSchema(WebhookDelivery);
  app.addSchema(Event);
  const tags = ['Webhooks'];
  const base = '/api/organization/:organization_uid/webhook-endpoints';
  const listOf = <T>(
    request: { url: string },
    items: T[],
    total: number,
    page: ReturnType<typeof pageRequest>,
  ) => {
    const meta = pageMeta(page, total);
    return { items, _meta: meta, _links: pageLinks(deps.config.publicBaseUrl, request.url, meta) };
  };

  app.get(
    base,
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        tags,
        summary: "List the organization's webhook endpoints, newest first (admins)",
        params: OrganizationParams,
        querystring: ListEndpointsQuery,
        response: { 200: EndpointListEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listEndpoints(db, ctx, page);
      return envelope(listOf(request, items, total, page), 'Webhook endpoints');
    },
  );

  app.post(
    base,
    {
      schema: {
        operationId: 'createWebhookEndpoint',
        tags,
        summary: 'Register a webhook endpoint (admins); the answer carries its signing secret, once',
        params: OrganizationParams,
        body: CreateEndpointBody,
        response: { 201: EndpointWithSecretEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:write' },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.params.organization_uid);
      const endpoint = await service.createEndpoint(db, ctx, request.body, options);
      return reply.code(201).send(envelope(endpoint, 'Webhook endpoint created', 201));
    },
  );

  app.get(
    `${base}/:uid`,
    {
      schema: {
        operationId: 'getWebhookEndpoint',
        tags,
        summary: 'A webhook endpoint (admins; never its secret)',
        params: EndpointParams,
        response: { 200: EndpointEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:read', errors: ['not_found'] },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      return envelope(await service.getEndpoint(db, ctx, request.params.uid), 'Webhook endpoint');
    },
  );

  app.patch(
    `${base}/:uid`,
    {
      schema: {
        operationId: 'updateWebhookEndpoint',
        tags,
        summary: "Change a webhook endpoint's address, description, event types or enabled (admins)",
        params: EndpointParams,
        body: UpdateEndpointBody,
        response: { 200: EndpointEnvelope, ...errorResponses },
      },
      config: {
        scope: 'webhooks:write',
        errors: ['not_found'],
        exists: (ctx, { uid }) => service.endpointOrThrow(db, ctx, uid!),
      },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      const endpoint = await service.updateEndpoint(db, ctx, request.params.uid, request.body, options);
      return envelope(endpoint, 'Webhook endpoint updated');
    },
  );

  app.delete(
    `${base}/:uid`,
    {
      schema: {
        operationId: 'deleteWebhookEndpoint',
        tags,
        summary: 'Remove a webhook endpoint and its delivery log (admins)',
        params: EndpointParams,
        response: { 200: EndpointEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:write', errors: ['not_found'] },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      return envelope(await service.deleteEndpoint(db, ctx, request.params.uid), 'Webhook endpoint removed');
    },
  );

  app.post(
    `${base}/:uid/rotate-secret`,
    {
      schema: {
        operationId: 'rotateWebhookEndpointSecret',
        tags,
        summary: 'A new signing secret, answered once; the old one keeps signing for 24 hours (admins)',
        params: EndpointParams,
        response: { 200: EndpointWithSecretEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:write', errors: ['not_found'] },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      const endpoint = await service.rotateEndpointSecret(db, ctx, request.params.uid, options);
      return envelope(endpoint, 'Webhook secret rotated');
    },
  );

  app.post(
    `${base}/:uid/test`,
    {
      schema: {
        operationId: 'sendWebhookTestEvent',
        tags,
        summary: 'Send a webhook.test event to this endpoint (admins); answers its delivery',
        params: EndpointParams,
        response: { 202: DeliveryEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:write', errors: ['not_found', 'invalid_state'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.params.organization_uid);
      const delivery = await service.sendTestEvent(db, deps.jobs, ctx, request.params.uid);
      return reply.code(202).send(envelope(delivery, 'Test event queued', 202));
    },
  );

  app.get(
    `${base}/:uid/deliveries`,
    {
      schema: {
        operationId: 'listWebhookDeliveries',
        tags,
        summary: "An endpoint's delivery log, newest first: attempts, last answer and time (admins)",
        params: EndpointParams,
        querystring: ListDeliveriesQuery,
        response: { 200: DeliveryListEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:read', errors: ['not_found'] },
    },
    async (request) => {
      const ctx = request.tenant(request.params.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listDeliveries(
        db,
        ctx,
        request.params.uid,
        { status: request.query.status },
        page,
      );
      return envelope(listOf(request, items, total, page), 'Webhook deliveries');
    },
  );

  app.post(
    `${base}/deliveries/:delivery_uid/resend`,
    {
      schema: {
        operationId: 'resendWebhookDelivery',
        tags,
        summary: 'Send a delivery again now, with the same webhook-id (admins)',
        params: DeliveryParams,
        response: { 202: DeliveryEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:write', errors: ['not_found', 'invalid_state'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.params.organization_uid);
      const delivery = await service.resendDelivery(db, deps.jobs, ctx, request.params.delivery_uid);
      return reply.code(202).send(envelope(delivery, 'Delivery queued again', 202));
    },
  );

  app.get(
    '/api/events',
    {
      schema: {
        operationId: 'listEvents',
        tags,
        summary: "The organization's events of the last 30 days, newest first (admins; for polling)",
        querystring: ListEventsQuery,
        response: { 200: EventListEnvelope, ...errorResponses },
      },
      config: { scope: 'webhooks:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listEvents(
        db,
        ctx,
        { type: request.query.type, entity_uid: request.query.entity_uid },
        page,
      );
      return envelope(listOf(request, items, total, page), 'Events');
    },
  );
}
