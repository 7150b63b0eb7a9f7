import { BODY_LIMITS } from '../../platform/http/route-rules.ts';
import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import * as claims from './agent-run-claims.service.ts';
import {
  ActivitiesEnvelope,
  ActivitiesQuery,
  AgentRunEnvelope,
  AgentRunItem,
  ClaimEnvelope,
  ClaimRunBody,
  CompleteRunBody,
  FailRunBody,
  GetRunQuery,
  HeartbeatBody,
  ListRunsQuery,
  RunListEnvelope,
  NotificationListEnvelope,
  NotificationsQuery,
  RunUidParams,
  StartRunBody,
} from './agent-runs.schemas.ts';
import * as runs from './agent-runs.service.ts';
import { getAgentRow } from './agents.service.ts';
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
      config: {
        scope: 'agents:write',
        errors: ['not_found', 'invalid_state'],
        exists: (ctx, { agent_uid }) => getAgentRow(db, ctx, agent_uid!),
      },
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

  // ---- runs of outside runtimes (docs/agents.md#runs-of-outside-runtimes) ----
  const claimDeps = { db, jobs: deps.jobs, chat: deps.clients.chat };

  app.get(
    '/api/agent-runs',
    {
      schema: {
        operationId: 'listAgentRuns',
        tags,
        summary:
          'Runs of the organization by status, agent, agent type or approval (a runtime finds its work)',
        querystring: ListRunsQuery,
        response: { 200: RunListEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:read' },
    },
    async (request) => {
      const { items, total, page } = await claims.listRuns(
        db,
        request.tenant(request.query.organization_uid),
        request.query,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Agent runs');
    },
  );

  app.post(
    '/api/agent-runs/:run_uid/claim',
    {
      schema: {
        operationId: 'claimAgentRun',
        tags,
        summary: 'Claim a pending run of an outside runtime: running under a lease, with a claim token',
        params: RunUidParams,
        body: ClaimRunBody,
        response: { 200: ClaimEnvelope, ...errorResponses },
      },
      config: {
        scope: 'agents:write',
        errors: ['not_found', 'invalid_state', 'run_claimed'],
        exists: (ctx, { run_uid }) => runs.getRun(db, ctx, run_uid!),
      },
    },
    async (request) =>
      envelope(
        await claims.claimRun(claimDeps, request.tenant(), request.params.run_uid, request.body),
        'Agent run claimed',
      ),
  );

  app.post(
    '/api/agent-runs/:run_uid/heartbeat',
    {
      schema: {
        operationId: 'heartbeatAgentRun',
        tags,
        summary: 'Renew the lease of a claimed run',
        params: RunUidParams,
        body: HeartbeatBody,
        response: { 200: AgentRunEnvelope, ...errorResponses },
      },
      config: {
        scope: 'agents:write',
        errors: ['not_found', 'invalid_state', 'claim_mismatch'],
        exists: (ctx, { run_uid }) => runs.getRun(db, ctx, run_uid!),
      },
    },
    async (request) =>
      envelope(
        await claims.renewClaim(claimDeps, request.tenant(), request.params.run_uid, request.body),
        'Lease renewed',
      ),
  );

  app.post(
    '/api/agent-runs/:run_uid/complete',
    {
      bodyLimit: BODY_LIMITS.LARGE,
      schema: {
        operationId: 'completeAgentRun',
        tags,
        summary: 'Complete a claimed run with its outcome (the same request again answers the run)',
        params: RunUidParams,
        body: CompleteRunBody,
        response: { 200: AgentRunEnvelope, ...errorResponses },
      },
      config: {
        scope: 'agents:write',
        errors: ['not_found', 'invalid_state', 'claim_mismatch'],
        exists: (ctx, { run_uid }) => runs.getRun(db, ctx, run_uid!),
      },
    },
    async (request) =>
      envelope(
        await claims.completeClaimedRun(claimDeps, request.tenant(), request.params.run_uid, request.body),
        'Agent run completed',
      ),
  );

  app.post(
    '/api/agent-runs/:run_uid/fail',
    {
      schema: {
        operationId: 'failAgentRun',
        tags,
        summary: 'Fail a claimed run with its error (the same request again answers the run)',
        params: RunUidParams,
        body: FailRunBody,
        response: { 200: AgentRunEnvelope, ...errorResponses },
      },
      config: {
        scope: 'agents:write',
        errors: ['not_found', 'invalid_state', 'claim_mismatch'],
        exists: (ctx, { run_uid }) => runs.getRun(db, ctx, run_uid!),
      },
    },
    async (request) =>
      envelope(
        await claims.failClaimedRun(claimDeps, request.tenant(), request.params.run_uid, request.body),
        'Agent run failed',
      ),
  );
}
