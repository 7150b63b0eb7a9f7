import { sql } from 'drizzle-orm';
import { date, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations, timestamps } from '../tenancy/tenancy.tables.ts';
import type { PolicySnapshot } from './approval-rules.ts';

export const TASK_TYPES = ['task', 'hil_approval'] as const;
export type TaskType = (typeof TASK_TYPES)[number];
export const TASK_STATUSES = ['todo', 'in_progress', 'in_review', 'done', 'canceled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TASK_PRIORITIES = ['urgent', 'high', 'medium', 'low'] as const;
export type TaskPriority = (typeof TASK_PRIORITIES)[number];
/** How an approval ended: a person approved or rejected it, or its policy's deadline passed (fail closed). */
export const RESOLUTIONS = ['approved', 'rejected', 'expired'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];
export const CONTEXT_ENTITY_TYPES = ['invoice', 'party'] as const;
export type ContextEntityType = (typeof CONTEXT_ENTITY_TYPES)[number];

/** A person's feedback on an approval, waiting for the agent's revision. `at` is the database's clock. */
export interface ApprovalResponse {
  feedback: string;
  user_uid: string;
  at: string;
}

const at = (name: string) => timestamp(name, { withTimezone: true });

/** Work tasks (interface 2.8): tasks for people, and approvals agents wait on. */
export const workTasks = pgTable(
  'work_tasks',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    type: text('type', { enum: TASK_TYPES }).notNull().default('task'),
    title: text('title').notNull(),
    description: text('description').notNull().default(''),
    status: text('status', { enum: TASK_STATUSES }).notNull().default('todo'),
    priority: text('priority', { enum: TASK_PRIORITIES }).notNull().default('medium'),
    dueDate: date('due_date', { mode: 'string' }),
    assigneeType: text('assignee_type', { enum: ['user', 'agent'] }),
    assigneeUserUid: uuid('assignee_user_uid'),
    assigneeAgentUid: uuid('assignee_agent_uid'),
    originType: text('origin_type', { enum: ['user', 'agent'] }).notNull(),
    originUserUid: uuid('origin_user_uid'),
    originAgentUid: uuid('origin_agent_uid'),
    originTriggerType: text('origin_trigger_type'),
    // hil_approval only:
    reasoning: text('reasoning'),
    toolArgs: jsonb('tool_args').$type<Record<string, unknown>>(),
    trigger: jsonb('trigger').$type<Record<string, unknown>>(),
    /** The run that raised the approval, when one did. */
    runUid: uuid('run_uid'),
    resolution: text('resolution', { enum: RESOLUTIONS }),
    resolvedAt: at('resolved_at'),
    resolvedByUserUid: uuid('resolved_by_user_uid'),
    resolutionNote: text('resolution_note'),
    /**
     * The approval policy's rules as they were when the approval was raised (migration 0022), with the
     * approvers escalation added; null: no policy applied (any member decides, once, no deadline).
     */
    policy: jsonb('policy').$type<PolicySnapshot>(),
    /** Who started it: the person who asked for the run, or the user of the key that raised it. */
    initiatorUserUid: uuid('initiator_user_uid'),
    expiresAt: at('expires_at'),
    escalateAt: at('escalate_at'),
    escalatedAt: at('escalated_at'),
    /**
     * The feedback a person sent without deciding (`action: respond`) that the agent has not answered
     * with a revision yet (migration 0024); null otherwise.
     */
    response: jsonb('response').$type<ApprovalResponse>(),
    /** Bumped on every change: the list's `updated_at` sort and optimistic checks read it. */
    revision: integer('revision').notNull().default(1),
    /**
     * Bumped only when `tool_args` change (migration 0038): a decision sent with the revision the person
     * was shown is refused when the arguments changed since.
     */
    argsRevision: integer('args_revision').notNull().default(1),
    ...timestamps,
  },
  (t) => [
    index('work_tasks_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc()),
    index('work_tasks_org_status_idx').on(t.organizationUid, t.status, t.createdAt.desc()),
    index('work_tasks_org_assignee_user_idx').on(t.organizationUid, t.assigneeUserUid),
    index('work_tasks_org_assignee_agent_idx').on(t.organizationUid, t.assigneeAgentUid),
    index('work_tasks_title_trgm_idx').using('gin', sql`${t.title} gin_trgm_ops`),
    index('work_tasks_description_trgm_idx').using('gin', sql`${t.description} gin_trgm_ops`),
    index('work_tasks_status_trgm_idx').using('gin', sql`${t.status} gin_trgm_ops`),
    index('work_tasks_expiry_idx')
      .on(t.expiresAt)
      .where(sql`${t.resolution} is null and ${t.expiresAt} is not null`),
    index('work_tasks_escalation_idx')
      .on(t.escalateAt)
      .where(sql`${t.resolution} is null and ${t.escalatedAt} is null and ${t.escalateAt} is not null`),
  ],
);

/** The invoices and parties a task is about (`context_entities`), in the order they were given. */
export const workTaskContextEntities = pgTable(
  'work_task_context_entities',
  {
    organizationUid: uuid('organization_uid').notNull(),
    taskUid: uuid('task_uid')
      .notNull()
      .references(() => workTasks.uid),
    entityType: text('entity_type', { enum: CONTEXT_ENTITY_TYPES }).notNull(),
    entityUid: uuid('entity_uid').notNull(),
    position: integer('position').notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.organizationUid, t.taskUid, t.entityType, t.entityUid] }),
    // "Which open tasks are about this invoice?" (the collections agent asks before raising another).
    index('work_task_context_entity_idx').on(t.organizationUid, t.entityType, t.entityUid),
  ],
);

/** The change log (interface 2.8 `change_log`): append-only. */
export const workTaskChanges = pgTable(
  'work_task_changes',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    taskUid: uuid('task_uid')
      .notNull()
      .references(() => workTasks.uid),
    at: at('at').notNull().defaultNow(),
    /** `system`: Remit itself (an approval expired or escalated by its policy's deadline). */
    byType: text('by_type', { enum: ['user', 'agent', 'system'] }).notNull(),
    byUserUid: uuid('by_user_uid'),
    byAgentUid: uuid('by_agent_uid'),
    /** The actor's name when it acted (kept even if they are renamed later). */
    byName: text('by_name').notNull(),
    action: text('action').notNull(),
    details: jsonb('details').$type<Record<string, unknown> | null>(),
    /** Order within one instant (several fields changed by one PATCH). */
    seq: integer('seq').notNull().default(0),
  },
  (t) => [index('work_task_changes_task_idx').on(t.organizationUid, t.taskUid, t.at, t.seq)],
);

/**
 * Who approved an approval (migration 0022): one row per person, so a policy's `required_approvals`
 * counts distinct people. An approval with edited `tool_args` deletes the earlier rows (they approved
 * something else).
 */
export const workTaskApprovals = pgTable(
  'work_task_approvals',
  {
    organizationUid: uuid('organization_uid').notNull(),
    taskUid: uuid('task_uid')
      .notNull()
      .references(() => workTasks.uid),
    userUid: uuid('user_uid').notNull(),
    at: at('at')
      .notNull()
      .default(sql`clock_timestamp()`),
  },
  (t) => [primaryKey({ columns: [t.organizationUid, t.taskUid, t.userUid] })],
);
