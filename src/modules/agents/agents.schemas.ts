import { Type, type Static } from 'typebox';
import { DateTime, Envelope, Nullable, PageMeta, Uuid, pageQuery } from '../../platform/http/schemas.ts';
import { AGENT_STATUSES } from './agents.tables.ts';

export const AgentStatus = Type.Union(AGENT_STATUSES.map((s) => Type.Literal(s)));
export const TRIGGER_TYPES = ['manual', 'schedule', 'email_received'] as const;

const EventSwitches = Type.Object(
  {
    action_taken: Type.Optional(Type.Boolean()),
    approval_required: Type.Optional(Type.Boolean()),
    outcome: Type.Optional(Type.Boolean()),
    error: Type.Optional(Type.Boolean()),
    digest: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const NotificationConfigInput = Type.Object(
  {
    chat_channel_id: Type.String({ minLength: 1, maxLength: 255, description: 'the bot must be a member' }),
    events: Type.Optional(EventSwitches),
  },
  { additionalProperties: false },
);

export const NotificationConfigView = Type.Object({
  chat_channel_id: Type.String(),
  events: Type.Object({
    action_taken: Type.Boolean(),
    approval_required: Type.Boolean(),
    outcome: Type.Boolean(),
    error: Type.Boolean(),
    digest: Type.Boolean(),
  }),
});

export const TriggerInput = Type.Object(
  {
    type: Type.Union(TRIGGER_TYPES.map((t) => Type.Literal(t))),
    /** `schedule` triggers: a five-field cron expression in UTC. */
    cron: Type.Optional(Type.String({ minLength: 9, maxLength: 100 })),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);
export const TriggerView = Type.Object({
  type: Type.String(),
  cron: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
});

export const ToolInput = Type.Object(
  {
    type: Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }),
    requires_approval: Type.Optional(Type.Boolean({ default: true })),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);
export const ToolView = Type.Object({
  type: Type.String(),
  requires_approval: Type.Boolean(),
  description: Type.Optional(Type.String()),
});

export const Agent = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    agent_type: Type.String(),
    name: Type.String(),
    description: Type.String(),
    instructions: Type.String(),
    status: Type.String(),
    created_by_uid: Nullable(Uuid),
    notification_config: Nullable(NotificationConfigView),
    runs_count: Type.Integer(),
    created_on: DateTime,
    updated_on: DateTime,
    triggers: Type.Array(TriggerView),
    tools: Type.Array(ToolView),
  },
  { $id: 'Agent', title: 'Agent' },
);
export const AgentRef = Type.Ref('Agent');
export const AgentEnvelope = Envelope(AgentRef);
export const AgentListEnvelope = Envelope(Type.Object({ items: Type.Array(AgentRef), _meta: PageMeta }));

const Name = Type.String({ minLength: 1, maxLength: 128 });
const Text = (max: number) => Type.String({ maxLength: max });

export const CreateAgentBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    name: Name,
    agent_type: Type.Optional(
      Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$', description: '`collections` is the built-in agent' }),
    ),
    description: Type.Optional(Text(10_000)),
    instructions: Type.Optional(Text(100_000)),
    status: Type.Optional(AgentStatus),
    notification_config: Type.Optional(Nullable(NotificationConfigInput)),
    triggers: Type.Optional(Type.Array(TriggerInput, { maxItems: 20 })),
    tools: Type.Optional(Type.Array(ToolInput, { maxItems: 50 })),
  },
  { additionalProperties: false },
);
export type CreateAgentBodyT = Static<typeof CreateAgentBody>;

export const PatchAgentBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Text(10_000)),
    instructions: Type.Optional(Text(100_000)),
    status: Type.Optional(AgentStatus),
    notification_config: Type.Optional(Nullable(NotificationConfigInput)),
    triggers: Type.Optional(Type.Array(TriggerInput, { maxItems: 20 })),
    tools: Type.Optional(Type.Array(ToolInput, { maxItems: 50 })),
  },
  { additionalProperties: false },
);
export type PatchAgentBodyT = Static<typeof PatchAgentBody>;
export type NotificationConfigInputT = Static<typeof NotificationConfigInput>;

export const AgentUidParams = Type.Object({ agent_uid: Uuid });

export const ListAgentsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  status: Type.Optional(AgentStatus),
  agent_type: Type.Optional(Type.String({ maxLength: 64 })),
  ...pageQuery(25),
});
