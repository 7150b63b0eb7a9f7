import { envelope } from '../../platform/http/envelope.ts';
import { BODY_LIMITS } from '../../platform/http/route-rules.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  CreateTaskBody,
  GetTaskQuery,
  ListTasksQuery,
  PatchTaskBody,
  TaskUidParams,
  WorkTask,
  WorkTaskEnvelope,
  WorkTaskListEnvelope,
} from './work-tasks.schemas.ts';
import { startTaskStatusWaiters } from './task-status-waiters.ts';
import { getTaskWhenDecided } from './task-wait.ts';
import * as service from './work-tasks.service.ts';

export async function workTaskRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(WorkTask);
  const tags = ['Work tasks'];
  const decisions = startTaskStatusWaiters(deps.database.notifications, deps.config.taskWaitRecheckS * 1000);
  // Before the server stops accepting: a held request answers now with what it has (preClose runs first).
  app.addHook('preClose', (done) => {
    decisions.waiters.close();
    done();
  });
  app.addHook('onClose', async () => decisions.stop());
  app.decorate('taskWaiters', decisions.waiters);

  app.post(
    '/api/work-tasks',
    {
      schema: {
        operationId: 'createWorkTask',
        tags,
        summary: 'Create a task for a person (type task; origin is the caller)',
        body: CreateTaskBody,
        response: { 201: WorkTaskEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: { scope: 'work_tasks:write' },
    },
    async (request, reply) => {
      const task = await service.createTask(
        db,
        deps.jobs,
        request.tenant(request.body.organization_uid),
        request.body,
      );
      return reply.code(201).send(envelope(task, 'Work task created', 201));
    },
  );

  app.get(
    '/api/work-tasks',
    {
      schema: {
        operationId: 'listWorkTasks',
        tags,
        summary: 'List work tasks with filters, sort and paging',
        querystring: ListTasksQuery,
        response: { 200: WorkTaskListEnvelope, ...errorResponses },
      },
      config: { scope: 'work_tasks:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listTasks(db, ctx, request.query, page);
      return envelope({ items, _meta: pageMeta(page, total) }, 'Work tasks');
    },
  );

  app.get(
    '/api/work-tasks/:task_uid',
    {
      schema: {
        operationId: 'getWorkTask',
        tags,
        summary:
          'Get a work task with its context entities and change log; `wait` holds it until decided or responded to',
        params: TaskUidParams,
        querystring: GetTaskQuery,
        response: { 200: WorkTaskEnvelope, ...errorResponses },
      },
      config: { scope: 'work_tasks:read', errors: ['not_found'] },
    },
    async (request, reply) => {
      const ctx = request.tenant();
      const uid = request.params.task_uid;
      const waitS = request.query.wait ?? 0;
      const task =
        waitS > 0
          ? await getTaskWhenDecided(
              decisions.waiters,
              () => service.getTask(db, ctx, uid),
              uid,
              waitS,
              reply,
            )
          : await service.getTask(db, ctx, uid);
      return envelope(task, 'Work task');
    },
  );

  app.patch(
    '/api/work-tasks/:task_uid',
    {
      schema: {
        operationId: 'updateWorkTask',
        tags,
        summary: 'Update a task, or answer a hil_approval (action approve|reject|respond)',
        description:
          'A `task` takes title, description, assign_to, priority, due_date, status and context_entities. ' +
          'A `hil_approval` takes only the resolve schema: action (required), tool_args (approve only), ' +
          'resolution_note (optional; a policy may require it to reject), feedback (respond only, required: the approval stays open ' +
          'and the agent revises it; docs/approvals.md#respond-feedback-without-deciding). ' +
          'Fields of the other kind are a 422. Under an approval policy (docs/approvals.md) only its ' +
          'approvers decide (403 not_an_approver), the initiator may be barred from approving (403 ' +
          'initiator_cannot_approve), an approval may need several people (each approve is counted until ' +
          'the count is reached; the same person twice is 409 already_approved), and past its deadline ' +
          'nobody decides it (409 approval_expired). Send args_revision (the one you were shown) to decide ' +
          'only that version of tool_args: after a change it is 409 approval_changed and nothing is decided ' +
          '(docs/approvals.md#decide-what-you-saw).',
        params: TaskUidParams,
        body: PatchTaskBody,
        response: { 200: WorkTaskEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.LARGE,
      config: {
        scope: 'work_tasks:write',
        exists: (ctx, { task_uid }) => service.getTask(db, ctx, task_uid!),
        errors: [
          'not_found',
          'already_resolved',
          'already_approved',
          'approval_expired',
          'approval_changed',
          'not_an_approver',
          'initiator_cannot_approve',
        ],
      },
    },
    async (request) => {
      const task = await service.patchTask(
        db,
        deps.jobs,
        request.tenant(),
        request.params.task_uid,
        request.body,
      );
      return envelope(task, 'Work task updated');
    },
  );
}
