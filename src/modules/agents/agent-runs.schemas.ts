import { Type, type Static } from 'typebox';
import { DateTime, Envelope, Nullable, PageMeta, Uuid, pageQuery } from '../../platform/http/schemas.ts';
import { NOTIFICATION_EVENTS } from './agents.tables.ts';

export const RUN_ATTRIBUTES = [
  'agent_uid',
  'agent_version_uid',
  'scratchpad_uid',
  'workflow_id',
  'approach',
  'status',
  'sandbox',
  'trigger_type',
  'started_on',
  'completed_on',
  'created_on',
  'token_usage',
  'task_uid',
  'error',
  'outcome',
] as const;
export type RunAttribute = (typeof RUN_ATTRIBUTES)[number];

const TokenUsage = Type.Object({
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
});

/** Interface 2.4: `{id, type: "agent-runs", attributes}`; every attribute optional (sparse fields). */
export const AgentRunItem = Type.Object(
  {
    id: Uuid,
    type: Type.Literal('agent-runs'),
    attributes: Type.Object({
      agent_uid: Type.Optional(Uuid),
      agent_version_uid: Type.Optional(Uuid),
      scratchpad_uid: Type.Optional(Uuid),
      workflow_id: Type.Optional(Nullable(Type.String())),
      approach: Type.Optional(Type.String()),
      status: Type.Optional(Type.String()),
      sandbox: Type.Optional(Type.Boolean()),
      trigger_type: Type.Optional(Type.String()),
      started_on: Type.Optional(Nullable(DateTime)),
      completed_on: Type.Optional(Nullable(DateTime)),
      created_on: Type.Optional(DateTime),
      token_usage: Type.Optional(TokenUsage),
      task_uid: Type.Optional(Nullable(Uuid)),
      error: Type.Optional(Nullable(Type.String())),
      outcome: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
    }),
  },
  { $id: 'AgentRun', title: 'AgentRun' },
);
export const AgentRunRef = Type.Ref('AgentRun');
export const AgentRunEnvelope = Envelope(AgentRunRef);

const Group = Type.Object({ trigger_type: Type.String(), count: Type.Integer() });
export const ActivitiesEnvelope = Envelope(
  Type.Object({ items: Type.Array(AgentRunRef), _meta: PageMeta, groups: Type.Optional(Type.Array(Group)) }),
);

/** `_from` bounds must name their timezone (interface 4.3); `_to` bounds without one are read as UTC. */
const FromBound = Type.String({ format: 'date-time', description: 'inclusive; must carry a timezone' });
const ToBound = Type.String({ format: 'iso-date-time', description: 'inclusive; UTC when no timezone' });

export const ActivitiesQuery = Type.Object({
  status: Type.Optional(Type.String({ maxLength: 200, description: 'comma-separated run statuses' })),
  started_on_from: Type.Optional(FromBound),
  started_on_to: Type.Optional(ToBound),
  completed_on_from: Type.Optional(FromBound),
  completed_on_to: Type.Optional(ToBound),
  created_on_from: Type.Optional(FromBound),
  created_on_to: Type.Optional(ToBound),
  has_started: Type.Optional(Type.Boolean()),
  has_completed: Type.Optional(Type.Boolean()),
  group_by: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('trigger')], { default: 'none' })),
  sort: Type.Optional(
    Type.String({
      pattern: '^[+ -]?(started_on|completed_on|created_on|status)$',
      default: '-started_on',
      description: 'prefix + ascending or - descending',
    }),
  ),
  'fields[agent-runs]': Type.Optional(
    Type.String({ maxLength: 500, description: 'comma-separated attributes; token_usage only this way' }),
  ),
  ...pageQuery(10),
});
export type ActivitiesQueryT = Static<typeof ActivitiesQuery>;

export const StartRunBody = Type.Object(
  {
    trigger_type: Type.Optional(
      Type.Union([Type.Literal('manual'), Type.Literal('schedule'), Type.Literal('email_received')], {
        default: 'manual',
      }),
    ),
    sandbox: Type.Optional(Type.Boolean({ default: false })),
    input: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 50 })),
  },
  { additionalProperties: false },
);
export type StartRunBodyT = Static<typeof StartRunBody>;

export const RunUidParams = Type.Object({ run_uid: Uuid });
export const GetRunQuery = Type.Object({
  'fields[agent-runs]': Type.Optional(
    Type.String({
      maxLength: 500,
      description: 'comma-separated attributes, as for activities; token_usage only this way',
    }),
  ),
});

export const Notification = Type.Object({
  uid: Uuid,
  agent_uid: Uuid,
  event: Type.String(),
  channel_id: Nullable(Type.String()),
  text: Type.String(),
  delivery_status: Type.String({
    description:
      'recorded (nothing to post), pending (to be posted; retried while Slack is down or rate-limiting), sent or failed',
  }),
  delivery_error: Nullable(Type.String({ description: 'why the last attempt failed (also while pending)' })),
  delivery_attempts: Type.Integer({ minimum: 0, description: 'posts tried so far' }),
  next_attempt_at: Nullable(DateTime),
  run_uid: Nullable(Uuid),
  task_uid: Nullable(Uuid),
  invoice_uid: Nullable(Uuid),
  created_at: DateTime,
  delivered_at: Nullable(DateTime),
});
export const NotificationListEnvelope = Envelope(
  Type.Object({ items: Type.Array(Notification), _meta: PageMeta }),
);
export const NotificationsQuery = Type.Object({
  event: Type.Optional(Type.Union(NOTIFICATION_EVENTS.map((e) => Type.Literal(e)))),
  run_uid: Type.Optional(
    Type.String({ format: 'uuid', description: 'only what this run of the agent reported' }),
  ),
  ...pageQuery(25),
});
