import { sql } from 'drizzle-orm';
import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { organizations, timestamps, users } from '../tenancy/tenancy.tables.ts';

export const AGENT_STATUSES = ['draft', 'active', 'paused'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];
export const RUN_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled', 'stopped'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const NOTIFICATION_EVENTS = [
  'action_taken',
  'approval_required',
  'outcome',
  'error',
  'digest',
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];

export interface NotificationConfig {
  chat_channel_id: string;
  events: Record<NotificationEvent, boolean>;
}
/** A trigger an agent answers to: `{type: "manual" | "schedule" | "email_received", …settings}`. */
export type AgentTrigger = { type: string } & Record<string, unknown>;
/** A tool an agent may use: `{type: "send_email", requires_approval: true}`. */
export type AgentTool = { type: string; requires_approval?: boolean } & Record<string, unknown>;
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

const at = (name: string) => timestamp(name, { withTimezone: true });

/** Agents (interface 2.5): what an automated worker is told to do, with which triggers and tools. */
export const agents = pgTable(
  'agents',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid')
      .notNull()
      .references(() => organizations.uid),
    agentType: text('agent_type').notNull().default('custom'),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    instructions: text('instructions').notNull().default(''),
    status: text('status', { enum: AGENT_STATUSES }).notNull().default('draft'),
    createdByUid: uuid('created_by_uid').references(() => users.uid),
    notificationConfig: jsonb('notification_config').$type<NotificationConfig | null>(),
    triggers: jsonb('triggers').$type<AgentTrigger[]>().notNull().default([]),
    tools: jsonb('tools').$type<AgentTool[]>().notNull().default([]),
    /** The version runs are stamped with; a new one whenever instructions or tools change. */
    currentVersionUid: uuid('current_version_uid'),
    runsCount: integer('runs_count').notNull().default(0),
    ...timestamps,
  },
  (t) => [index('agents_org_created_idx').on(t.organizationUid, t.createdAt.desc(), t.uid.desc())],
);

/** What an agent was told at one point in time; every run names the version it ran. */
export const agentVersions = pgTable(
  'agent_versions',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    agentUid: uuid('agent_uid')
      .notNull()
      .references(() => agents.uid),
    version: integer('version').notNull(),
    instructions: text('instructions').notNull(),
    tools: jsonb('tools').$type<AgentTool[]>().notNull(),
    createdAt: at('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('agent_versions_agent_version_key').on(t.organizationUid, t.agentUid, t.version)],
);

/** Agent runs (interface 2.4): one execution, from request to its end. */
export const agentRuns = pgTable(
  'agent_runs',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    agentUid: uuid('agent_uid')
      .notNull()
      .references(() => agents.uid),
    agentVersionUid: uuid('agent_version_uid').notNull(),
    /** Working memory of the run (notes between steps); the uid names it for outside runtimes. */
    scratchpadUid: uuid('scratchpad_uid')
      .notNull()
      .default(sql`gen_random_uuid()`),
    /** The pg-boss job that executes it. */
    workflowId: text('workflow_id'),
    approach: text('approach').notNull().default('default'),
    status: text('status', { enum: RUN_STATUSES }).notNull().default('pending'),
    sandbox: boolean('sandbox').notNull().default(false),
    triggerType: text('trigger_type').notNull().default('manual'),
    /** The event that started it (`{type, …}`), handed to approvals it raises. */
    trigger: jsonb('trigger').$type<Record<string, unknown>>().notNull().default({}),
    input: jsonb('input').$type<Record<string, unknown>>().notNull().default({}),
    /** The approval whose decision, or a person's response to it, requested this run (trigger_type `approval`). */
    taskUid: uuid('task_uid'),
    requestedByUid: uuid('requested_by_uid'),
    scratchpad: jsonb('scratchpad').$type<Record<string, unknown>>().notNull().default({}),
    outcome: jsonb('outcome').$type<Record<string, unknown> | null>(),
    error: text('error'),
    tokenUsage: jsonb('token_usage')
      .$type<TokenUsage>()
      .notNull()
      .default({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }),
    cancelRequested: boolean('cancel_requested').notNull().default(false),
    // Migration 0025: the claim of an outside runtime (docs/agents.md#runs-of-outside-runtimes). Only a
    // hash of the claim token is kept; the lease is renewed by heartbeats and taken back when it lapses.
    claimTokenHash: text('claim_token_hash'),
    claimedBy: text('claimed_by'),
    claimedAt: at('claimed_at'),
    leaseSeconds: integer('lease_seconds'),
    leaseExpiresAt: at('lease_expires_at'),
    /** How many times a claim's lease lapsed (the run went back to pending); too many fail it. */
    leaseLapses: integer('lease_lapses').notNull().default(0),
    startedOn: at('started_on'),
    completedOn: at('completed_on'),
    createdOn: at('created_on').notNull().defaultNow(),
    updatedOn: at('updated_on').notNull().defaultNow(),
  },
  (t) => [
    index('agent_runs_agent_started_idx').on(t.organizationUid, t.agentUid, t.startedOn.desc(), t.uid),
    index('agent_runs_agent_created_idx').on(t.organizationUid, t.agentUid, t.createdOn.desc(), t.uid),
    // Migration 0025: runs waiting for an outside runtime, oldest first; leases the sweep takes back.
    index('agent_runs_pending_idx')
      .on(t.organizationUid, t.createdOn, t.uid)
      .where(sql`status = 'pending'`),
    index('agent_runs_lease_idx')
      .on(t.leaseExpiresAt)
      .where(sql`status = 'running' and lease_expires_at is not null`),
    // At most one follow-up run per decided approval; a person's responses (feedback without a
    // decision) may start several before it (migration 0024).
    uniqueIndex('agent_runs_task_decision_key')
      .on(t.organizationUid, t.taskUid)
      .where(sql`task_uid is not null and coalesce(input #>> '{decision,action}', 'approve') <> 'respond'`),
    index('agent_runs_task_idx')
      .on(t.organizationUid, t.taskUid)
      .where(sql`task_uid is not null`),
  ],
);

/** Chat notifications (interface §6): every event an agent emits, and what became of its delivery. */
export const agentNotifications = pgTable(
  'agent_notifications',
  {
    uid: uuid('uid')
      .primaryKey()
      .default(sql`gen_random_uuid()`),
    organizationUid: uuid('organization_uid').notNull(),
    agentUid: uuid('agent_uid')
      .notNull()
      .references(() => agents.uid),
    runUid: uuid('run_uid'),
    taskUid: uuid('task_uid'),
    invoiceUid: uuid('invoice_uid'),
    event: text('event', { enum: NOTIFICATION_EVENTS }).notNull(),
    channelId: text('channel_id'),
    text: text('text').notNull(),
    /** `recorded` (no chat configured), `sent`, or `failed` with `error`. */
    deliveryStatus: text('delivery_status', { enum: ['recorded', 'pending', 'sent', 'failed'] })
      .notNull()
      .default('recorded'),
    deliveryError: text('delivery_error'),
    externalId: text('external_id'),
    deliveredAt: at('delivered_at'),
    createdAt: at('created_at').notNull().defaultNow(),
    /** Posts tried so far (migration 0027): a delivery job's, each one. */
    attempts: integer('attempts').notNull().default(0),
    /** When a pending post is next tried: Slack's Retry-After, or backoff. */
    nextAttemptAt: at('next_attempt_at'),
    /** Set while a post is under way: a retry after a crash first looks for what that attempt posted. */
    attemptStartedAt: at('attempt_started_at'),
  },
  (t) => [
    index('agent_notifications_agent_idx').on(t.organizationUid, t.agentUid, t.createdAt.desc(), t.uid),
    // Migration 0018: a run's notifications (the `run_uid` filter of the list).
    index('agent_notifications_run_idx')
      .on(t.organizationUid, t.runUid, t.createdAt.desc(), t.uid)
      .where(sql`run_uid is not null`),
    // Migration 0027: the pending sweep, and a task's approval messages.
    index('agent_notifications_pending_idx')
      .on(t.nextAttemptAt, t.createdAt)
      .where(sql`delivery_status = 'pending'`),
    index('agent_notifications_task_idx')
      .on(t.organizationUid, t.taskUid)
      .where(sql`task_uid is not null`),
  ],
);
