import { Type, type Static } from 'typebox';
import {
  dateOrDateTime,
  DateTime,
  Envelope,
  literals,
  Nullable,
  PageLinks,
  PageMeta,
  pageQuery,
  Uuid,
} from '../../platform/http/schemas.ts';
import { ACTOR_TYPES } from '../../platform/http/context.ts';
import { AUDIT_ACTIONS, AUDIT_ENTITY_TYPES } from './audit.service.ts';

const FieldChange = Type.Object({ before: Type.Unknown(), after: Type.Unknown() });

export const AuditEvent = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    occurred_at: DateTime,
    actor_type: literals(ACTOR_TYPES),
    actor_uid: Nullable(Uuid),
    actor_user_uid: Nullable(Uuid),
    action: Type.String({ description: '<entity type>.<what happened>, e.g. invoice.approved' }),
    entity_type: Type.String(),
    entity_uid: Uuid,
    parent_entity_type: Nullable(Type.String()),
    parent_entity_uid: Nullable(Uuid),
    changes: Type.Record(Type.String(), FieldChange, {
      description: '{field: {before, after}}; secrets show only as "[redacted]" or null',
    }),
    request_id: Nullable(Type.String()),
    client_address: Nullable(Type.String()),
  },
  { $id: 'AuditEvent' },
);

// A date (YYYY-MM-DD, that UTC day's start; as `to`, its end) or an RFC 3339 date-time with its zone,
// both within 0001–9999 (the formats are the validation layer's, date-range.ts).
const bound = (description: string) => Type.Optional(dateOrDateTime({ maxLength: 40, description }));

export const AuditEventsParams = Type.Object({ organization_uid: Uuid });

export const ListAuditEventsQuery = Type.Object({
  actor_type: Type.Optional(literals(ACTOR_TYPES)),
  actor_uid: Type.Optional(Uuid),
  actor_user_uid: Type.Optional(Uuid),
  entity_type: Type.Optional(literals(AUDIT_ENTITY_TYPES)),
  entity_uid: Type.Optional(
    Type.String({
      format: 'uuid',
      description: "the entity's events and those of what belongs to it (an invoice's line items, payments)",
    }),
  ),
  action: Type.Optional(literals(AUDIT_ACTIONS)),
  from: bound('inclusive'),
  to: bound('inclusive; a date includes that whole day'),
  ...pageQuery(25),
});
export type ListAuditEventsQueryT = Static<typeof ListAuditEventsQuery>;

export const AuditEventListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Type.Ref('AuditEvent')), _meta: PageMeta, _links: PageLinks }),
);
