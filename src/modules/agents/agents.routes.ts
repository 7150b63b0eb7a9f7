import { BODY_LIMITS } from '../../platform/http/route-rules.ts';
import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  AgentApprovalParams,
  RaiseApprovalBody,
  ReviseApprovalBody,
  WorkTaskEnvelope,
} from '../work-tasks/work-tasks.schemas.ts';
// The built-in agent's executor and its approval check, registered wherever approvals can be resolved.
import './collections-agent.ts';
import { raiseAgentApproval, reviseAgentApproval } from './agent-approvals.service.ts';
import {
  Agent,
  AgentEnvelope,
  AgentListEnvelope,
  AgentUidParams,
  CreateAgentBody,
  ListAgentsQuery,
  PatchAgentBody,
} from './agents.schemas.ts';
import * as service from './agents.service.ts';
import { getTask } from '../work-tasks/work-tasks.service.ts';

export async function agentRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const { chat } = deps.clients;
  app.addSchema(Agent);
  const tags = ['Agents'];

  app.post(
    '/api/agents',
    {
      schema: {
        operationId: 'createAgent',
        tags,
        summary: 'Create an agent (status draft unless given)',
        body: CreateAgentBody,
        response: { 201: AgentEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: { scope: 'agents:write', idempotency: 'deferred', errors: ['bad_gateway', 'gateway_timeout'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.body.organization_uid);
      const agent = await service.createAgent(db, ctx, chat, request.body);
      return reply.code(201).send(envelope(agent, 'Agent created', 201));
    },
  );

  app.get(
    '/api/agents',
    {
      schema: {
        operationId: 'listAgents',
        tags,
        summary: 'List the organization’s agents, newest first',
        querystring: ListAgentsQuery,
        response: { 200: AgentListEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listAgents(
        db,
        ctx,
        { status: request.query.status, agentType: request.query.agent_type },
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Agents');
    },
  );

  app.get(
    '/api/agents/:agent_uid',
    {
      schema: {
        operationId: 'getAgent',
        tags,
        summary: 'Get an agent',
        params: AgentUidParams,
        response: { 200: AgentEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(await service.getAgent(db, request.tenant(), request.params.agent_uid), 'Agent'),
  );

  app.patch(
    '/api/agents/:agent_uid',
    {
      schema: {
        operationId: 'updateAgent',
        tags,
        summary: 'Update an agent (only the sent fields change; notification_config null clears it)',
        params: AgentUidParams,
        body: PatchAgentBody,
        response: { 200: AgentEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: {
        scope: 'agents:write',
        errors: ['not_found', 'bad_gateway', 'gateway_timeout'],
        exists: (ctx, { agent_uid }) => service.getAgentRow(db, ctx, agent_uid!),
      },
    },
    async (request) =>
      envelope(
        await service.patchAgent(db, request.tenant(), chat, request.params.agent_uid, request.body),
        'Agent updated',
      ),
  );

  app.post(
    '/api/agents/:agent_uid/approvals',
    {
      schema: {
        operationId: 'raiseAgentApproval',
        tags: [...tags, 'Work tasks'],
        summary: 'Raise a hil_approval task on behalf of the agent (any agent runtime)',
        params: AgentUidParams,
        body: RaiseApprovalBody,
        response: { 201: WorkTaskEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: {
        scope: 'work_tasks:write',
        errors: ['not_found'],
        exists: (ctx, { agent_uid }) => service.getAgentRow(db, ctx, agent_uid!),
      },
    },
    async (request, reply) => {
      const task = await raiseAgentApproval(
        { ...deps, chat },
        request.tenant(),
        request.params.agent_uid,
        request.body,
      );
      return reply.code(201).send(envelope(task, 'Approval requested', 201));
    },
  );

  app.patch(
    '/api/agents/:agent_uid/approvals/:task_uid',
    {
      schema: {
        operationId: 'reviseAgentApproval',
        tags: [...tags, 'Work tasks'],
        summary:
          'Revise an approval the agent raised, still undecided (e.g. in answer to a person’s feedback)',
        description:
          'tool_args are merged over the current ones; changed arguments discard the approvals counted so ' +
          'far, and may not move the approval under another approval policy (422). The pending response, ' +
          'if any, is answered: the approval is pending again (todo). docs/approvals.md#respond-feedback-without-deciding',
        params: AgentApprovalParams,
        body: ReviseApprovalBody,
        response: { 200: WorkTaskEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: {
        scope: 'work_tasks:write',
        errors: ['not_found', 'already_resolved'],
        exists: async (ctx, { agent_uid, task_uid }) => {
          await service.getAgentRow(db, ctx, agent_uid!);
          await getTask(db, ctx, task_uid!);
        },
      },
    },
    async (request) => {
      const task = await reviseAgentApproval(
        { ...deps, chat },
        request.tenant(),
        request.params.agent_uid,
        request.params.task_uid,
        request.body,
      );
      return envelope(task, 'Approval revised');
    },
  );
}
