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
  'input',
  'trigger',
  'claimed_by',
  'claimed_at',
  'lease_expires_at',
  'lease_lapses',
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
      input: Type.Optional(
        Type.Record(Type.String(), Type.Unknown(), {
          description: 'What the run was started with (a follow-up run: the approval it acts on)',
        }),
      ),
      trigger: Type.Optional(
        Type.Record(Type.String(), Type.Unknown(), { description: 'The event that started it: {type, …}' }),
      ),
      claimed_by: Type.Optional(
        Nullable(Type.String({ description: 'The outside runtime holding the run (its runtime_id)' })),
      ),
      claimed_at: Type.Optional(Nullable(DateTime)),
      lease_expires_at: Type.Optional(
        Type.Union([DateTime, Type.Null()], {
          description: 'While claimed: when the claim lapses unless renewed',
        }),
      ),
      lease_lapses: Type.Optional(
        Type.Integer({ description: 'How many claims of this run lapsed (it went back to pending)' }),
      ),
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

// ---- runs of outside runtimes (docs/agents.md#runs-of-outside-runtimes) ----

export const ListRunsQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  status: Type.Optional(Type.String({ maxLength: 200, description: 'comma-separated run statuses' })),
  agent_uid: Type.Optional(Uuid),
  agent_type: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  task_uid: Type.Optional(Uuid),
  sort: Type.Optional(
    Type.String({
      pattern: '^[+ -]?created_on$',
      default: 'created_on',
      description: 'created_on (oldest first, the order to work them in) or -created_on',
    }),
  ),
  'fields[agent-runs]': Type.Optional(
    Type.String({ maxLength: 500, description: 'comma-separated attributes, as for activities' }),
  ),
  ...pageQuery(25),
});
export type ListRunsQueryT = Static<typeof ListRunsQuery>;
export const RunListEnvelope = Envelope(Type.Object({ items: Type.Array(AgentRunRef), _meta: PageMeta }));

const ClaimToken = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'The claim_token the claim answered',
});
const leaseSeconds = (options: { description: string }) =>
  Type.Integer({ minimum: 10, maximum: 3600, ...options });
const UsageBody = Type.Object(
  {
    prompt_tokens: Type.Integer({ minimum: 0, maximum: 1e12 }),
    completion_tokens: Type.Integer({ minimum: 0, maximum: 1e12 }),
    total_tokens: Type.Integer({ minimum: 0, maximum: 1e12 }),
  },
  { additionalProperties: false },
);

export const ClaimRunBody = Type.Object(
  {
    runtime_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description: 'Who claims it (shown to others as claimed_by); default: the API key (or user)',
      }),
    ),
    lease_seconds: Type.Optional(
      leaseSeconds({ description: 'How long the claim holds without a heartbeat (seconds); default 300' }),
    ),
  },
  { additionalProperties: false },
);
export type ClaimRunBodyT = Static<typeof ClaimRunBody>;
export const ClaimEnvelope = Envelope(
  Type.Object({
    claim_token: Type.String({
      description:
        'Send it with heartbeat, complete and fail; answered once (a retry with the same Idempotency-Key replays it)',
    }),
    run: AgentRunRef,
  }),
);

export const HeartbeatBody = Type.Object(
  {
    claim_token: ClaimToken,
    lease_seconds: Type.Optional(
      leaseSeconds({ description: 'The new lease from now (seconds); default: the claim’s' }),
    ),
  },
  { additionalProperties: false },
);
export type HeartbeatBodyT = Static<typeof HeartbeatBody>;

export const CompleteRunBody = Type.Object(
  {
    claim_token: ClaimToken,
    outcome: Type.Object(
      {
        summary: Type.String({ minLength: 1, maxLength: 2000, description: 'What the run did, for people' }),
      },
      { additionalProperties: true, maxProperties: 50, description: 'Kept on the run as its outcome' },
    ),
    token_usage: Type.Optional(UsageBody),
  },
  { additionalProperties: false },
);
export type CompleteRunBodyT = Static<typeof CompleteRunBody>;

export const FailRunBody = Type.Object(
  {
    claim_token: ClaimToken,
    error: Type.String({ minLength: 1, maxLength: 2000, description: 'Why it failed, for people' }),
    token_usage: Type.Optional(UsageBody),
  },
  { additionalProperties: false },
);
export type FailRunBodyT = Static<typeof FailRunBody>;
