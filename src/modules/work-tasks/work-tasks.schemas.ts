import { Type, type Static } from 'typebox';
import {
  DateTime,
  Envelope,
  literals,
  Nullable,
  PageMeta,
  Uuid,
  pageQuery,
  stringEnum,
} from '../../platform/http/schemas.ts';
import { RESOLUTIONS, TASK_PRIORITIES, TASK_STATUSES, TASK_TYPES } from './work-tasks.tables.ts';
import { APPROVER_ROLES } from './approval-policies.tables.ts';

export const TaskStatus = literals(TASK_STATUSES);
export const TaskPriority = literals(TASK_PRIORITIES);
export const TaskType = literals(TASK_TYPES);
const DateOnly = Type.String({ format: 'date', description: 'YYYY-MM-DD' });
const JsonObject = Type.Record(Type.String(), Type.Unknown());

// ---- read shape (interface 2.8) ----

const Assignee = Type.Object({
  type: Type.String({ description: 'user or agent' }),
  user_uid: Type.Optional(Uuid),
  agent_uid: Type.Optional(Uuid),
  full_name: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  avatar_url: Type.Optional(Nullable(Type.String())),
});

const Origin = Type.Object({
  type: Type.String({ description: 'user or agent' }),
  user_uid: Type.Optional(Uuid),
  agent_uid: Type.Optional(Uuid),
  user_name: Type.Optional(Type.String()),
  agent_name: Type.Optional(Type.String()),
  avatar_url: Type.Optional(Nullable(Type.String())),
  trigger_type: Type.Optional(Nullable(Type.String())),
});

const ContextEntityView = Type.Object({
  entity_type: Type.String(),
  entity_uid: Uuid,
  invoice_number: Type.Optional(Type.String()),
  counterparty_name: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
});

const ChangeLogEntry = Type.Object({
  at: DateTime,
  by_name: Type.String(),
  by_type: Type.String(),
  action: Type.String(),
  details: Nullable(JsonObject),
});

const ResolvedBy = Type.Object({
  type: Type.String(),
  user_uid: Type.Optional(Uuid),
  user_name: Type.Optional(Type.String()),
  avatar_url: Type.Optional(Nullable(Type.String())),
});

/** The rules an approval was raised under (docs/approvals.md): who decides and how many must agree. */
const TaskApprovalPolicy = Type.Object({
  uid: Uuid,
  name: Type.String(),
  required_approvals: Type.Integer({ description: 'distinct people who must approve' }),
  approver_roles: Type.Array(stringEnum(APPROVER_ROLES)),
  approver_user_uids: Type.Array(Uuid, { description: 'named approvers, with those an escalation added' }),
  approver_users: Type.Array(Type.Object({ user_uid: Uuid, user_name: Type.String() }), {
    description: 'the named approvers with their names, in the same order',
  }),
  forbid_initiator: Type.Boolean({ description: 'the person who started it may not approve it' }),
  initiator_user_uid: Nullable(
    Type.String({
      format: 'uuid',
      description: 'who started it: the person who asked for the run, or the user of the key that raised it',
    }),
  ),
});

const TaskApproval = Type.Object({ user_uid: Uuid, user_name: Type.String(), at: DateTime });

/** The longest feedback a person may send with `action: respond`. */
export const MAX_FEEDBACK_LENGTH = 4000;

const TaskResponse = Type.Object(
  { feedback: Type.String(), user_uid: Uuid, user_name: Type.String(), at: DateTime },
  {
    description:
      'feedback a person sent without deciding (action respond) that the agent has not answered with a ' +
      'revision yet; null otherwise, and on a decided approval',
  },
);

export const WorkTask = Type.Object(
  {
    uid: Uuid,
    organization_uid: Uuid,
    title: Type.String(),
    type: stringEnum(TASK_TYPES),
    status: stringEnum(TASK_STATUSES),
    priority: stringEnum(TASK_PRIORITIES),
    due_date: Nullable(Type.String()),
    description: Type.String(),
    created_at: DateTime,
    updated_at: DateTime,
    assign_to: Nullable(Assignee),
    origin: Origin,
    context_entities: Type.Array(ContextEntityView),
    change_log: Type.Array(ChangeLogEntry),
    // hil_approval only:
    reasoning: Type.Optional(Type.String()),
    tool_args: Type.Optional(JsonObject),
    args_revision: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'the version of tool_args: moves when the agent revises them or a person edits them with an approval; ' +
          'send it back with a decision to decide only what you saw',
      }),
    ),
    trigger: Type.Optional(Nullable(JsonObject)),
    run_uid: Type.Optional(Nullable(Uuid)),
    resolution: Type.Optional(
      Nullable(stringEnum(RESOLUTIONS, { description: 'null until decided; expired: its deadline passed' })),
    ),
    resolved_at: Type.Optional(Nullable(DateTime)),
    resolved_by: Type.Optional(Nullable(ResolvedBy)),
    resolution_note: Type.Optional(Nullable(Type.String())),
    approval_policy: Type.Optional(Nullable(TaskApprovalPolicy)),
    approvals: Type.Optional(
      Type.Array(TaskApproval, {
        description:
          'under an approval policy, who approved so far (an edit starts the count again); empty without one',
      }),
    ),
    expires_at: Type.Optional(Nullable(DateTime)),
    escalated_at: Type.Optional(Nullable(DateTime)),
    response: Type.Optional(Nullable(TaskResponse)),
    /** PATCH answers only: why an approval started no follow-up run (interface 3.1). */
    _warning: Type.Optional(Type.String()),
  },
  { $id: 'WorkTask', title: 'WorkTask' },
);
export const WorkTaskRef = Type.Ref('WorkTask');
export const WorkTaskEnvelope = Envelope(WorkTaskRef);
export const WorkTaskListEnvelope = Envelope(
  Type.Object({ items: Type.Array(WorkTaskRef), _meta: PageMeta }),
);

// ---- write shapes ----

export const AssignInput = Type.Object(
  {
    type: Type.Optional(Type.Union([Type.Literal('user'), Type.Literal('agent')])),
    user_uid: Type.Optional(Uuid),
    agent_uid: Type.Optional(Uuid),
  },
  { additionalProperties: false, description: 'null or {} unassigns' },
);
export type AssignInputT = Static<typeof AssignInput>;

export const ContextEntityInput = Type.Object(
  { entity_type: Type.Union([Type.Literal('invoice'), Type.Literal('party')]), entity_uid: Uuid },
  { additionalProperties: false },
);
export type ContextEntityInputT = Static<typeof ContextEntityInput>;
const ContextEntities = Type.Array(ContextEntityInput, { maxItems: 100 });

const Title = Type.String({ minLength: 1, maxLength: 255 });
const Description = Type.String({ maxLength: 20_000 });

export const CreateTaskBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    title: Title,
    description: Type.Optional(Description),
    priority: Type.Optional(TaskPriority),
    status: Type.Optional(TaskStatus),
    due_date: Type.Optional(Nullable(DateOnly)),
    assign_to: Type.Optional(Nullable(AssignInput)),
    context_entities: Type.Optional(ContextEntities),
  },
  { additionalProperties: false },
);
export type CreateTaskBodyT = Static<typeof CreateTaskBody>;

/**
 * One body for both task types, because the type is only known once the task is read: a `task` takes
 * the update fields, a `hil_approval` only the resolve schema (`action`, `tool_args`, `resolution_note`,
 * `feedback`).
 * Sending the other type's fields is a 422 naming them.
 */
export const PatchTaskBody = Type.Object(
  {
    title: Type.Optional(Title),
    description: Type.Optional(Description),
    assign_to: Type.Optional(Nullable(AssignInput)),
    priority: Type.Optional(TaskPriority),
    due_date: Type.Optional(Nullable(DateOnly)),
    status: Type.Optional(TaskStatus),
    context_entities: Type.Optional(ContextEntities),
    action: Type.Optional(
      Type.Union([Type.Literal('approve'), Type.Literal('reject'), Type.Literal('respond')], {
        description:
          'approve (optionally with edited tool_args), reject (resolution_note optional, unless the ' +
          'approval policy requires a reason), or respond: ' +
          'feedback to the agent without deciding (feedback required; the approval stays open)',
      }),
    ),
    tool_args: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100 })),
    resolution_note: Type.Optional(
      Type.String({
        maxLength: 10_000,
        description:
          'optional: the reason of a rejection (required only when the approval policy requires one), a note with an approval',
      }),
    ),
    args_revision: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2_147_483_647,
        description:
          'optional: the args_revision you were shown; when the arguments changed since, nothing is decided ' +
          '(409 approval_changed). Without it the decision applies to the arguments as they are now',
      }),
    ),
    feedback: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_FEEDBACK_LENGTH,
        description:
          'with action respond only: what the agent should change (its follow-up run revises from it)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PatchTaskBodyT = Static<typeof PatchTaskBody>;

export const RaiseApprovalBody = Type.Object(
  {
    title: Title,
    reasoning: Type.String({ maxLength: 20_000 }),
    tool_args: Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100 }),
    trigger: Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100 }),
    description: Type.Optional(Description),
    priority: Type.Optional(TaskPriority),
    due_date: Type.Optional(Nullable(DateOnly)),
    assign_to: Type.Optional(Nullable(AssignInput)),
    context_entities: Type.Optional(ContextEntities),
    run_uid: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
export type RaiseApprovalBodyT = Static<typeof RaiseApprovalBody>;

/** An agent's revision of its own approval, still undecided (usually in answer to a person's feedback). */
export const ReviseApprovalBody = Type.Object(
  {
    tool_args: Type.Record(Type.String(), Type.Unknown(), {
      maxProperties: 100,
      description: 'the revised members, merged over the current tool_args (as a reviewer’s edits are)',
    }),
    reasoning: Type.Optional(
      Type.String({ maxLength: 20_000, description: 'replaces the reasoning; absent: it stays' }),
    ),
    summary: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        description: 'what was revised and why, for the change log (default: "Revised tool_args")',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReviseApprovalBodyT = Static<typeof ReviseApprovalBody>;

export const AgentApprovalParams = Type.Object({ agent_uid: Uuid, task_uid: Uuid });

export const TASK_SORT_FIELDS = ['created_at', 'updated_at', 'due_date', 'priority', 'status'] as const;

export const ListTasksQuery = Type.Object({
  organization_uid: Type.Optional(Uuid),
  status: Type.Optional(Type.String({ maxLength: 200, description: 'comma-separated statuses' })),
  type: Type.Optional(TaskType),
  priority: Type.Optional(Type.String({ maxLength: 200, description: 'comma-separated priorities' })),
  assignee_user_uid: Type.Optional(Uuid),
  assignee_agent_uid: Type.Optional(Uuid),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'substring of title or description' })),
  sort: Type.Optional(
    Type.String({
      pattern: `^[+ -]?(${TASK_SORT_FIELDS.join('|')})$`,
      default: '-created_at',
      description: 'prefix + ascending, - descending',
    }),
  ),
  ...pageQuery(25),
});
export type ListTasksQueryT = Static<typeof ListTasksQuery>;

export const TaskUidParams = Type.Object({ task_uid: Uuid });

/** The longest `wait` a request may ask for: a minute, below every proxy's usual idle timeout. */
export const MAX_TASK_WAIT_S = 60;

export const GetTaskQuery = Type.Object({
  wait: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_TASK_WAIT_S,
      description:
        'Seconds to hold the answer while the task is an approval not yet decided (long-poll): it answers ' +
        'as soon as the approval is decided or a person responds to it with feedback (a new `response`), ' +
        'or with the pending task once `wait` has passed. ' +
        'Any other task answers at once (docs/work-tasks.md#waiting-for-a-decision).',
    }),
  ),
});
