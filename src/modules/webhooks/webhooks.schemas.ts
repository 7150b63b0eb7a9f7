import { Type, type Static } from 'typebox';
import {
  DateTime,
  Envelope,
  literals,
  Nullable,
  PageLinks,
  PageMeta,
  pageQuery,
  Uuid,
} from '../../platform/http/schemas.ts';
import { DELIVERY_STATUSES } from './webhooks.tables.ts';
import { ACCEPTED_EVENT_TYPES, ALL_EVENT_TYPES, TEST_EVENT_TYPE } from './webhook-signing.ts';

export const WebhookEndpoint = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    url: Type.String(),
    description: Type.String(),
    event_types: Type.Array(Type.String(), { description: 'Empty: every event type' }),
    enabled: Type.Boolean(),
    disabled_reason: Nullable(Type.String({ description: 'Why it was disabled automatically' })),
    /** Until then the secret before the last rotation signs too (a second signature). */
    previous_secret_expires_at: Nullable(DateTime),
    failing_since: Nullable(DateTime),
    last_success_at: Nullable(DateTime),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'WebhookEndpoint' },
);

/** The endpoint with its signing secret: only the answers of create and rotate-secret carry it. */
const EndpointWithSecret = Type.Object({
  ...WebhookEndpoint.properties,
  secret: Type.String({ description: 'whsec_… (Standard Webhooks); shown this once, never again' }),
});

export const WebhookDelivery = Type.Object(
  {
    uid: Uuid,
    endpoint_uid: Uuid,
    event_uid: Uuid,
    event_type: Type.String(),
    entity_type: Type.String(),
    entity_uid: Uuid,
    status: literals(DELIVERY_STATUSES),
    attempts: Type.Integer(),
    next_attempt_at: Nullable(DateTime),
    first_attempt_at: Nullable(DateTime),
    last_attempt_at: Nullable(DateTime),
    last_response_status: Nullable(Type.Integer()),
    last_duration_ms: Nullable(Type.Integer()),
    last_response_excerpt: Nullable(Type.String({ description: 'The first 1000 characters of the answer' })),
    last_error: Nullable(Type.String()),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'WebhookDelivery' },
);

export const Event = Type.Object(
  {
    uid: Uuid,
    type: literals(ALL_EVENT_TYPES),
    entity_type: Type.String(),
    entity_uid: Uuid,
    data: Type.Record(Type.String(), Type.Unknown()),
    created_at: DateTime,
  },
  { $id: 'Event' },
);

export const OrganizationParams = Type.Object({ organization_uid: Uuid });
export const EndpointParams = Type.Object({ organization_uid: Uuid, uid: Uuid });
export const DeliveryParams = Type.Object({ organization_uid: Uuid, delivery_uid: Uuid });

const Url = Type.String({
  minLength: 1,
  maxLength: 2000,
  description: 'http(s); private, loopback and link-local addresses are refused',
});
const Description = Type.String({ maxLength: 500 });
const EventTypes = Type.Array(literals(ACCEPTED_EVENT_TYPES), {
  maxItems: ACCEPTED_EVENT_TYPES.length,
  description:
    'The event types to send; empty or absent: every one. A deprecated name (work_task.approval_decided) is stored as its new one (approval.decided)',
});

export const CreateEndpointBody = Type.Object(
  {
    url: Url,
    description: Type.Optional(Description),
    event_types: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type CreateEndpointBodyT = Static<typeof CreateEndpointBody>;

export const UpdateEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    description: Type.Optional(Description),
    event_types: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean({ description: 'true again after an automatic disable' })),
  },
  { minProperties: 1, additionalProperties: false },
);
export type UpdateEndpointBodyT = Static<typeof UpdateEndpointBody>;

export const ListEndpointsQuery = Type.Object({ ...pageQuery(25) });
export const ListDeliveriesQuery = Type.Object({
  status: Type.Optional(literals(DELIVERY_STATUSES)),
  ...pageQuery(25),
});
export const ListEventsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  type: Type.Optional(literals([...ACCEPTED_EVENT_TYPES, TEST_EVENT_TYPE])),
  entity_uid: Type.Optional(Uuid),
  ...pageQuery(25),
});

const list = (ref: string) =>
  Envelope(Type.Object({ items: Type.Array(Type.Ref(ref)), _meta: PageMeta, _links: PageLinks }));

export const EndpointEnvelope = Envelope(Type.Ref('WebhookEndpoint'));
export const EndpointWithSecretEnvelope = Envelope(EndpointWithSecret);
export const EndpointListEnvelope = list('WebhookEndpoint');
export const DeliveryEnvelope = Envelope(Type.Ref('WebhookDelivery'));
export const DeliveryListEnvelope = list('WebhookDelivery');
export const EventListEnvelope = list('Event');
