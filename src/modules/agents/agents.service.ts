import { isDeepStrictEqual } from 'node:util';
import type { Db, DbOrTx } from '../../platform/db/client.ts';
import { requireUsableChannel, type ChatClient } from '../../platform/chat/chat.ts';
import { memberOrganizationUids, type RequestContext } from '../../platform/http/context.ts';
import { notFound, validationFailed } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import * as repo from './agents.repository.ts';
import { changesBetween, recordAuditEvent, recordUpdate } from '../audit/audit.service.ts';
import { isValidCron } from './cron.ts';
import type { CreateAgentBodyT, NotificationConfigInputT, PatchAgentBodyT } from './agents.schemas.ts';
import type { AgentStatus, AgentTool, AgentTrigger, NotificationConfig } from './agents.tables.ts';

export type AgentRow = repo.AgentRow;

/** The built-in collections agent (CONTRACT §5) and its defaults. */
export const COLLECTIONS_AGENT_TYPE = 'collections';
const DEFAULT_TOOLS: Record<string, AgentTool[]> = {
  [COLLECTIONS_AGENT_TYPE]: [{ type: 'send_email', requires_approval: true }],
};
const DEFAULT_TRIGGERS: Record<string, AgentTrigger[]> = {
  [COLLECTIONS_AGENT_TYPE]: [{ type: 'manual' }],
};

export function toAgentView(row: AgentRow) {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    agent_type: row.agentType,
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    status: row.status,
    created_by_uid: row.createdByUid,
    notification_config: row.notificationConfig ?? null,
    runs_count: row.runsCount,
    created_on: row.createdAt,
    updated_on: row.updatedAt,
    triggers: row.triggers,
    tools: row.tools,
  };
}
export type AgentView = ReturnType<typeof toAgentView>;

/** Interface 2.5: every event switch filled in, unspecified ones at their defaults. */
export function normalizeNotificationConfig(input: NotificationConfigInputT): NotificationConfig {
  const events = input.events ?? {};
  return {
    chat_channel_id: input.chat_channel_id,
    events: {
      action_taken: events.action_taken ?? true,
      approval_required: events.approval_required ?? true,
      outcome: events.outcome ?? true,
      error: events.error ?? true,
      digest: events.digest ?? false,
    },
  };
}

function normalizeTools(tools: CreateAgentBodyT['tools']): AgentTool[] {
  return (tools ?? []).map((tool) => ({
    type: tool.type,
    requires_approval: tool.requires_approval ?? true,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
  }));
}

function normalizeTriggers(triggers: CreateAgentBodyT['triggers']): AgentTrigger[] {
  return (triggers ?? []).map((trigger) => {
    if (trigger.type === 'schedule' && !trigger.cron)
      throw validationFailed('triggers', 'A schedule trigger needs a cron expression');
    if (trigger.type !== 'schedule' && trigger.cron !== undefined)
      throw validationFailed('triggers', 'Only schedule triggers take a cron expression');
    if (trigger.cron !== undefined && !isValidCron(trigger.cron))
      throw validationFailed(
        'triggers',
        'cron must have five fields (minute hour day month weekday), in UTC',
      );
    return { ...trigger };
  });
}

/** The bot must already be in the channel (interface 2.5); checked as the organization's channel is. */
async function assertChannelUsable(chat: ChatClient, config: NotificationConfig | null): Promise<void> {
  if (config) await requireUsableChannel(chat, config.chat_channel_id, 'notification_config.chat_channel_id');
}

/** Interface 2.5: 1 to 128 characters, and a name of only spaces is no name. */
function cleanName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0) throw validationFailed('name', 'name must have 1 to 128 characters');
  return trimmed;
}

/** Counted by runs, not changed by anyone's decision. */
const AGENT_NOISE = ['runs_count'];

export async function createAgent(
  db: Db,
  ctx: RequestContext,
  chat: ChatClient,
  body: CreateAgentBodyT,
): Promise<AgentView> {
  const agentType = body.agent_type ?? 'custom';
  const name = cleanName(body.name);
  const notificationConfig = body.notification_config
    ? normalizeNotificationConfig(body.notification_config)
    : null;
  const tools = body.tools ? normalizeTools(body.tools) : (DEFAULT_TOOLS[agentType] ?? []);
  const triggers = body.triggers ? normalizeTriggers(body.triggers) : (DEFAULT_TRIGGERS[agentType] ?? []);
  await assertChannelUsable(chat, notificationConfig);
  return db.transaction(async (tx) => {
    const agent = await repo.insertAgent(tx, {
      organizationUid: ctx.organizationUid,
      agentType,
      name,
      description: body.description ?? '',
      instructions: body.instructions ?? '',
      status: body.status ?? 'draft',
      createdByUid: ctx.principal.user.uid,
      notificationConfig,
      triggers,
      tools,
    });
    const versionUid = await repo.insertNextVersion(tx, agent);
    const created = await repo.updateAgent(tx, agent.organizationUid, agent.uid, {
      currentVersionUid: versionUid,
    });
    await recordAuditEvent(tx, ctx, {
      organizationUid: created.organizationUid,
      action: 'agent.created',
      entityUid: created.uid,
      changes: changesBetween(null, created, { omit: AGENT_NOISE }),
    });
    return toAgentView(created);
  });
}

/** An agent of any organization the caller belongs to; anything else is 404. */
export async function getAgentRow(db: Db, ctx: RequestContext, uid: string): Promise<AgentRow> {
  const agent = await repo.findAgent(db, memberOrganizationUids(ctx), uid);
  if (!agent) throw notFound('Agent');
  return agent;
}

export async function getAgent(db: Db, ctx: RequestContext, uid: string): Promise<AgentView> {
  return toAgentView(await getAgentRow(db, ctx, uid));
}

export async function patchAgent(
  db: Db,
  ctx: RequestContext,
  chat: ChatClient,
  uid: string,
  body: PatchAgentBodyT,
): Promise<AgentView> {
  const current = await getAgentRow(db, ctx, uid);
  const name = body.name !== undefined ? cleanName(body.name) : undefined;
  const notificationConfig =
    body.notification_config === undefined
      ? undefined
      : body.notification_config === null
        ? null
        : normalizeNotificationConfig(body.notification_config);
  const tools = body.tools ? normalizeTools(body.tools) : undefined;
  const triggers = body.triggers ? normalizeTriggers(body.triggers) : undefined;
  // Checked only when the channel changes: a bot removed later shows up as failed deliveries instead.
  if (
    notificationConfig &&
    notificationConfig.chat_channel_id !== current.notificationConfig?.chat_channel_id
  )
    await assertChannelUsable(chat, notificationConfig);

  return db.transaction(async (tx) => {
    const agent = await repo.findAgent(tx, [current.organizationUid], uid, { forUpdate: true });
    if (!agent) throw notFound('Agent');
    const changes: Partial<AgentRow> = {
      ...(name !== undefined ? { name } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.instructions !== undefined ? { instructions: body.instructions } : {}),
      ...(body.status !== undefined ? { status: body.status as AgentStatus } : {}),
      ...(notificationConfig !== undefined ? { notificationConfig } : {}),
      ...(tools !== undefined ? { tools } : {}),
      ...(triggers !== undefined ? { triggers } : {}),
    };
    const next = { ...agent, ...changes };
    // A run always names what it was told: a new version whenever instructions or tools change.
    if (next.instructions !== agent.instructions || !isDeepStrictEqual(next.tools, agent.tools))
      changes.currentVersionUid = await repo.insertNextVersion(tx, next);
    const updated = await repo.updateAgent(tx, agent.organizationUid, uid, changes);
    await recordUpdate(tx, ctx, {
      organizationUid: agent.organizationUid,
      action: 'agent.updated',
      entityUid: uid,
      before: agent,
      after: updated,
      options: { omit: AGENT_NOISE },
    });
    return toAgentView(updated);
  });
}

export async function listAgents(
  db: Db,
  ctx: RequestContext,
  filters: { status?: AgentStatus | undefined; agentType?: string | undefined },
  page: PageRequest,
) {
  const { rows, total } = await repo.listAgents(db, ctx.organizationUid, {
    ...filters,
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map(toAgentView), total };
}

/** An agent by uid within these organizations (optionally locked), for other modules' use cases. */
export function findAgent(
  db: DbOrTx,
  organizationUids: string[],
  uid: string,
  options: { forUpdate?: boolean } = {},
): Promise<repo.AgentRow | undefined> {
  return repo.findAgent(db, organizationUids, uid, options);
}

/** The organization's active agents with a trigger of this type (inbound email starts their runs). */
export function listActiveAgentsWithTrigger(
  db: DbOrTx,
  organizationUid: string,
  triggerType: string,
): Promise<repo.AgentRow[]> {
  return repo.listActiveAgentsWithTrigger(db, organizationUid, triggerType);
}
