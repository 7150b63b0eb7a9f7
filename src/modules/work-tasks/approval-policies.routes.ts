import { envelope } from '../../platform/http/envelope.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  ApprovalPolicy,
  CreatePolicyBody,
  ListPoliciesQuery,
  PolicyEnvelope,
  PolicyListEnvelope,
  PolicyParams,
  PolicyQuery,
  UpdatePolicyBody,
} from './approval-policies.schemas.ts';
import * as service from './approval-policies.service.ts';

/**
 * Approval policies (docs/approvals.md): who may decide an agent's approvals, how many must agree, and
 * their deadlines. Admins write them; every member reads them (the inbox explains the rule in force).
 * They act in the organization of the call: `organization_uid`, else the caller's default.
 */
export async function approvalPolicyRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(ApprovalPolicy);
  const tags = ['Approval policies'];

  app.post(
    '/api/approval-policies',
    {
      schema: {
        operationId: 'createApprovalPolicy',
        tags,
        summary: 'Create an approval policy (admins): approvers, required approvals, expiry, escalation',
        body: CreatePolicyBody,
        response: { 201: PolicyEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:write', errors: ['forbidden'] },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.body.organization_uid);
      const policy = await service.createPolicy(db, ctx, request.body);
      return reply.code(201).send(envelope(policy, 'Approval policy created', 201));
    },
  );

  app.get(
    '/api/approval-policies',
    {
      schema: {
        operationId: 'listApprovalPolicies',
        tags,
        summary: "List the organization's approval policies, newest first",
        querystring: ListPoliciesQuery,
        response: { 200: PolicyListEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listPolicies(db, ctx, page);
      return envelope({ items, _meta: pageMeta(page, total) }, 'Approval policies');
    },
  );

  app.get(
    '/api/approval-policies/:uid',
    {
      schema: {
        operationId: 'getApprovalPolicy',
        tags,
        summary: 'An approval policy',
        params: PolicyParams,
        querystring: PolicyQuery,
        response: { 200: PolicyEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:read', errors: ['not_found'] },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      return envelope(await service.getPolicy(db, ctx, request.params.uid), 'Approval policy');
    },
  );

  app.patch(
    '/api/approval-policies/:uid',
    {
      schema: {
        operationId: 'updateApprovalPolicy',
        tags,
        summary: 'Change an approval policy (admins); approvals already raised keep the rules they had',
        params: PolicyParams,
        querystring: PolicyQuery,
        body: UpdatePolicyBody,
        response: { 200: PolicyEnvelope, ...errorResponses },
      },
      config: {
        scope: 'agents:write',
        errors: ['forbidden', 'not_found'],
        exists: (ctx, { uid }) => service.policyExists(db, ctx, uid!),
      },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const policy = await service.updatePolicy(db, ctx, request.params.uid, request.body);
      return envelope(policy, 'Approval policy updated');
    },
  );

  app.delete(
    '/api/approval-policies/:uid',
    {
      schema: {
        operationId: 'deleteApprovalPolicy',
        tags,
        summary: 'Remove an approval policy (admins); approvals already raised keep the rules they had',
        params: PolicyParams,
        querystring: PolicyQuery,
        response: { 200: PolicyEnvelope, ...errorResponses },
      },
      config: { scope: 'agents:write', errors: ['forbidden', 'not_found'] },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      return envelope(await service.deletePolicy(db, ctx, request.params.uid), 'Approval policy removed');
    },
  );
}
