import { envelope } from '../../platform/http/envelope.ts';
import { BODY_LIMITS } from '../../platform/http/route-rules.ts';
import { pageMeta, pageRequest } from '../../platform/http/pagination.ts';
import { errorResponses } from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import {
  Conversation,
  ConversationEnvelope,
  ConversationListEnvelope,
  ConversationUidParams,
  CreateConversationBody,
  CreateMessageBody,
  InboundEmailBody,
  InboundEmailEnvelope,
  ListConversationsQuery,
  Message,
  MessageEnvelope,
} from './conversations.schemas.ts';
import * as service from './conversations.service.ts';

export async function conversationRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.addSchema(Message);
  app.addSchema(Conversation);
  const tags = ['Conversations'];

  app.post(
    '/api/conversations',
    {
      schema: {
        operationId: 'createConversation',
        tags,
        summary: 'Start a conversation with a party',
        body: CreateConversationBody,
        response: { 201: ConversationEnvelope, ...errorResponses },
      },
      config: { scope: 'email:write' },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.body.organization_uid);
      const conversation = await service.createConversation(db, ctx, request.body);
      return reply.code(201).send(envelope(conversation, 'Conversation created', 201));
    },
  );

  app.get(
    '/api/conversations',
    {
      schema: {
        operationId: 'listConversations',
        tags,
        summary: 'List conversations, newest first',
        querystring: ListConversationsQuery,
        response: { 200: ConversationListEnvelope, ...errorResponses },
      },
      config: { scope: 'email:read' },
    },
    async (request) => {
      const ctx = request.tenant(request.query.organization_uid);
      const page = pageRequest(request.query, 25);
      const { items, total } = await service.listConversations(
        db,
        ctx,
        { status: request.query.status, partyUid: request.query.party_uid },
        page,
      );
      return envelope({ items, _meta: pageMeta(page, total) }, 'Conversations');
    },
  );

  app.get(
    '/api/conversations/:conversation_uid',
    {
      schema: {
        operationId: 'getConversation',
        tags,
        summary: 'Get a conversation with its messages',
        params: ConversationUidParams,
        response: { 200: ConversationEnvelope, ...errorResponses },
      },
      config: { scope: 'email:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.getConversation(db, request.tenant(), request.params.conversation_uid),
        'Conversation',
      ),
  );

  app.post(
    '/api/conversations/:conversation_uid/messages',
    {
      schema: {
        operationId: 'createConversationMessage',
        tags,
        summary: 'Add a message to a conversation',
        params: ConversationUidParams,
        body: CreateMessageBody,
        response: { 201: MessageEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.MESSAGE,
      config: {
        scope: 'email:write',
        errors: ['not_found'],
        exists: (ctx, { conversation_uid }) => service.getConversation(db, ctx, conversation_uid!),
      },
    },
    async (request, reply) => {
      const message = await service.addMessage(
        db,
        request.tenant(),
        request.params.conversation_uid,
        request.body,
      );
      return reply.code(201).send(envelope(message, 'Message added', 201));
    },
  );

  app.post(
    '/api/inbound/email',
    {
      schema: {
        operationId: 'receiveInboundEmail',
        tags,
        summary: 'Receive an email: thread it and start the email_received runs of active agents',
        body: InboundEmailBody,
        response: { 201: InboundEmailEnvelope, ...errorResponses },
      },
      bodyLimit: BODY_LIMITS.MESSAGE,
      config: { scope: 'email:write' },
    },
    async (request, reply) => {
      const ctx = request.tenant(request.body.organization_uid);
      const result = await service.receiveInboundEmail(db, deps.jobs, ctx, request.body);
      return reply.code(201).send(envelope(result, 'Email received', 201));
    },
  );
}
