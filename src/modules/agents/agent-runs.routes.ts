import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  ActivitiesEnvelope,
  ActivitiesQuery,
  AgentRunEnvelope,
  AgentRunItem,
  GetRunQuery,
  NotificationListEnvelope,
  NotificationsQuery,
  RunUidParams,
  StartRunBody,
} from './agent-runs.schemas.ts';
import * as runs from './agent-runs.service.ts';
import { AgentUidParams } from './agents.schemas.ts';
import { listNotifications } from './notifications.service.ts';

export async function agentRunRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(AgentRunItem);
  const tags = ['Agent runs'];

  app.post(
    '/api/agents/:agent_uid/runs',
    {
      schema: {
        operationId: 'startAgentRun',
        tags,
        summary: 'Start a run (202: pending; a worker executes it)',
        params: AgentUidParams,
        body: StartRunBody,
        response: { 202: AgentRunEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:write', errors: ['not_found', 'invalid_state'] },
    },
    async (request, reply) => {
      const run = await runs.startRun(
        { db, jobs: deps.jobs },
        request.tenant(),
        request.params.agent_uid,
        request.body,
      );
      return reply.code(202).send(envelope(run, 'Agent run requested', 202));
    },
  );

  app.get(
    '/api/agents/:agent_uid/activities',
    {
      schema: {
        operationId: 'listAgentActivities',
        tags,
        summary: 'Runs of one agent: filters, grouping, sort, paging and sparse fields',
        params: AgentUidParams,
        querystring: ActivitiesQuery,
        response: { 200: ActivitiesEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:read', errors: ['not_found'] },
    },
    async (request) => {
      const { items, total, page, groups } = await runs.listActivities(
        db,
        request.tenant(),
        request.params.agent_uid,
        request.query,
      );
      return envelope(
        { items, _meta: pageMeta(page, total), ...(groups ? { groups } : {}) },
        'Agent activities',
      );
    },
  );

  app.get(
    '/api/agents/:agent_uid/notifications',
    {
      schema: {
        operationId: 'listAgentNotifications',
        tags,
        summary: 'Chat notifications the agent emitted, newest first, with their delivery',
        params: AgentUidParams,
        querystring: NotificationsQuery,
        response: { 200: NotificationListEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:read', errors: ['not_found'] },
    },
    async (request) => {
      const page = pageRequest(request.query, 25);
      const { items, total } = await listNotifications(
        db,
        request.tenant(),
        request.params.agent_uid,
        { event: request.query.event, runUid: request.query.run_uid },
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Agent notifications');
    },
  );

  app.get(
    '/api/agent-runs/:run_uid',
    {
      schema: {
        operationId: 'getAgentRun',
        tags,
        summary: 'Get one run (sparse fields as for activities; token_usage only when asked for and held)',
        params: RunUidParams,
        querystring: GetRunQuery,
        response: { 200: AgentRunEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await runs.getRun(db, request.tenant(), request.params.run_uid, request.query['fields[agent-runs]']),
        'Agent run',
      ),
  );

  app.post(
    '/api/agent-runs/:run_uid/cancel',
    {
      schema: {
        operationId: 'cancelAgentRun',
        tags,
        summary: 'Cancel a pending or running run (a running one stops at its next step)',
        params: RunUidParams,
        response: { 200: AgentRunEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:write', errors: ['not_found', 'invalid_state'] },
    },
    async (request) =>
      envelope(
        await runs.cancelRun({ db, jobs: deps.jobs }, request.tenant(), request.params.run_uid),
        'Agent run cancelled',
      ),
  );
}
