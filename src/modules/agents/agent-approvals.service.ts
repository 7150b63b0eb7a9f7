import type { RequestContext } from '../../platform/http/context.ts';
import { memberOrganizationUids } from '../../platform/http/context.ts';
import { AppError, notFound, validationFailed } from '../../platform/http/errors.ts';
import type { AppDeps } from '../../platform/http/types.ts';
import { raiseApproval, reviseApproval, viewTask, type TaskView } from '../work-tasks/work-tasks.service.ts';
import type { RaiseApprovalBodyT, ReviseApprovalBodyT } from '../work-tasks/work-tasks.schemas.ts';
import { findAgent, type AgentRow } from './agents.repository.ts';
import type { DbOrTx } from '../../platform/db/client.ts';
import { findRun } from './agent-runs.repository.ts';
import type { ChatClient } from '../../platform/chat/chat.ts';
import { notify } from './notifications.service.ts';

/**
 * The HTTP door for approvals: an agent runtime (ours or outside) asks a person before acting. The task
 * belongs to the agent's organization; `run_uid`, when given, must be one of that agent's runs.
 */
export async function raiseAgentApproval(
  deps: Pick<AppDeps, 'database' | 'jobs' | 'config'> & { chat: ChatClient },
  ctx: RequestContext,
  agentUid: string,
  body: RaiseApprovalBodyT,
): Promise<TaskView> {
  const { db } = deps.database;
  return db.transaction(async (tx) => {
    const agent = await findAgent(tx, memberOrganizationUids(ctx), agentUid);
    if (!agent) throw notFound('Agent');
    if (body.run_uid) {
      const run = await findRun(tx, [agent.organizationUid], body.run_uid);
      if (run?.agentUid !== agent.uid) throw validationFailed('run_uid', 'No run of this agent has that uid');
    }
    if (typeof body.trigger.type !== 'string' || body.trigger.type.length === 0)
      throw validationFailed('trigger.type', 'trigger needs a type (the event that started the agent)');
    const task = await raiseApproval(tx, {
      agent,
      title: body.title,
      reasoning: body.reasoning,
      toolArgs: body.tool_args,
      trigger: body.trigger,
      description: body.description,
      priority: body.priority,
      dueDate: body.due_date,
      assignTo: body.assign_to,
      contextEntities: body.context_entities,
      runUid: body.run_uid,
      origin: ctx,
      jobs: deps.jobs,
    });
    const view = await viewTask(tx, task);
    // Recorded with the approval, posted by a job once it commits: a person is told only about an
    // approval that exists, and about every one that does.
    await announceApproval(tx, deps, agent, view, 'needs approval', body.run_uid ?? null);
    return view;
  });
}

/**
 * The HTTP door for an agent's revision of its own approval, still undecided: what an outside runtime
 * does with a person's feedback (`action: respond`; docs/approvals.md#respond-feedback-without-deciding).
 * It answers whatever response is pending; the approval is pending again and its reviewers are told
 * (`approval_required`). A decided approval is 409 `already_resolved`; another agent's is 404.
 */
export async function reviseAgentApproval(
  deps: Pick<AppDeps, 'database' | 'jobs' | 'config'> & { chat: ChatClient },
  ctx: RequestContext,
  agentUid: string,
  taskUid: string,
  body: ReviseApprovalBodyT,
): Promise<TaskView> {
  const { db } = deps.database;
  return db.transaction(async (tx) => {
    const agent = await findAgent(tx, memberOrganizationUids(ctx), agentUid);
    if (!agent) throw notFound('Agent');
    const result = await reviseApproval(tx, {
      agent,
      taskUid,
      toolArgs: body.tool_args,
      answering: 'pending',
      summary: body.summary?.trim() || 'Revised tool_args',
      reasoning: body.reasoning,
      origin: ctx,
    });
    if (!result.revised)
      throw new AppError(
        'already_resolved',
        `This approval was already resolved (${result.task.resolution})`,
      );
    const view = await viewTask(tx, result.task);
    await announceApproval(
      tx,
      deps,
      agent,
      view,
      'revised its request and needs approval again',
      (view.run_uid as string | null) ?? null,
    );
    return view;
  });
}

/** The `approval_required` notice of an approval raised or revised over HTTP, in its transaction. */
async function announceApproval(
  tx: DbOrTx,
  deps: Pick<AppDeps, 'jobs' | 'config'> & { chat: ChatClient },
  agent: AgentRow,
  view: TaskView,
  what: string,
  runUid: string | null,
): Promise<void> {
  const invoice = (
    view.context_entities as { entity_type: string; entity_uid: string; invoice_number?: string }[]
  ).find((e) => e.entity_type === 'invoice');
  await notify(
    { db: tx, chat: deps.chat, jobs: deps.jobs },
    {
      agent,
      event: 'approval_required',
      text:
        `${agent.name} ${what}: ${view.title as string}` +
        (invoice ? ` (invoice ${invoice.invoice_number ?? invoice.entity_uid})` : '') +
        // The console's page of the approval, never an API address.
        `. Open it in Remit: ${deps.config.publicBaseUrl}/app/inbox/${view.uid as string}`,
      runUid,
      taskUid: view.uid as string,
      invoiceUid: invoice?.entity_uid ?? null,
    },
  );
}
