import type { TaskStatusWaiters } from './modules/work-tasks/task-status-waiters.ts';
import crypto from 'node:crypto';
import path from 'node:path';
import Fastify, { LogController, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import { registerDbRole } from './platform/http/db-role.ts';
import { registerSecurityHeaders } from './platform/http/security-headers.ts';
import { registerConsole } from './platform/http/console.ts';
import { registerApiDocs } from './platform/http/api-docs.ts';
import { storageUploadOrigin } from './platform/storage/create-storage.ts';
import authPlugin from './platform/http/auth.ts';
import idempotencyPlugin from './platform/http/idempotency.ts';
import {
  clientErrorHandler,
  frameworkErrorHandler,
  registerErrorHandling,
} from './platform/http/error-handler.ts';
import {
  applyQueryRules,
  BODY_LIMITS,
  scopeRuleProblems,
  type RouteAccess,
} from './platform/http/route-rules.ts';
import { schemaCompiler } from './platform/http/validation.ts';
import { registerJsonParser } from './platform/http/json-body.ts';
import { registerCheckOrder } from './platform/http/check-order.ts';
import { lazySharedSerializers } from './platform/http/serialization.ts';
import { resolveMembership } from './platform/http/context.ts';
import { ErrorBody } from './platform/http/schemas.ts';
import { API_TAGS, documentHeaders, documentRoute, sharedHeaderComponents } from './platform/http/openapi.ts';
import { AppError } from './platform/http/errors.ts';
import type { FastifyBaseLogger } from 'fastify';
import type { App, AppDeps, AppModule, JobDeps } from './platform/http/types.ts';
import { registerIdempotencyJobs } from './platform/http/idempotency.ts';
import { authenticate, MembershipCache } from './modules/api-keys/api-keys.service.ts';
import { startKeyAuthCache, type KeyAuthCache } from './modules/api-keys/key-auth-cache.ts';
import { startInvoiceViewCache, type InvoiceViewCache } from './modules/invoices/invoice-view-cache.ts';
import { LastUsedRecorder } from './modules/api-keys/last-used-recorder.ts';
import { apiKeyRoutes } from './modules/api-keys/api-keys.routes.ts';
import { meRoutes } from './modules/me/me.routes.ts';
import { preferenceRoutes } from './modules/me/preferences.routes.ts';
import { signInRoutes } from './modules/people/sign-in.routes.ts';
import { authenticateSession, SessionActivityRecorder } from './modules/people/sign-in.service.ts';
import { systemRoutes } from './modules/system/system.routes.ts';
import { partyRoutes } from './modules/parties/parties.routes.ts';
import { productRoutes } from './modules/products/products.routes.ts';
import { invoiceRoutes } from './modules/invoices/invoices.routes.ts';
import { invoiceListRoutes } from './modules/invoices/invoice-lists.routes.ts';
import {
  configureInvoiceDocumentJobs,
  invoiceDocumentRoutes,
} from './modules/invoices/invoice-documents.routes.ts';
import { billingRoutes } from './modules/billing/billing.routes.ts';
import { attachmentRoutes } from './modules/invoices/attachments.routes.ts';
import { paymentRoutes } from './modules/invoices/payments.routes.ts';
import { creditNoteRoutes } from './modules/invoices/credit-notes.routes.ts';
import { emailAccountRoutes } from './modules/email/email-accounts.routes.ts';
import { emailDraftRoutes } from './modules/email/email-drafts.routes.ts';
import { emailPrepareRoutes } from './modules/email/email-prepare.routes.ts';
import { agentRoutes } from './modules/agents/agents.routes.ts';
import { agentRunRoutes } from './modules/agents/agent-runs.routes.ts';
import { conversationRoutes } from './modules/conversations/conversations.routes.ts';
import { searchRoutes } from './modules/search/search.routes.ts';
import { workTaskRoutes } from './modules/work-tasks/work-tasks.routes.ts';
import { approvalLinkRoutes } from './modules/work-tasks/approval-links.routes.ts';
import { registerApprovalEmailJobs } from './modules/work-tasks/approval-emails.jobs.ts';
import { approvalPolicyRoutes } from './modules/work-tasks/approval-policies.routes.ts';
import { registerWorkTaskJobs } from './modules/work-tasks/work-tasks.jobs.ts';
import { metricRoutes } from './modules/metrics/metrics.routes.ts';
import { knowledgeRoutes } from './modules/knowledge/knowledge.routes.ts';
import { documentRoutes } from './modules/documents/documents.routes.ts';
import { storageRoutes } from './platform/storage/storage.routes.ts';
import { registerObjectDeleteJobs } from './platform/storage/object-deletes.ts';
import { slackRoutes } from './modules/slack/slack-interactions.routes.ts';
import { registerSlackJobs } from './modules/slack/slack.jobs.ts';
import { organizationSettingsRoutes } from './modules/tenancy/organization-settings.routes.ts';
import { auditRoutes } from './modules/audit/audit.routes.ts';
import { registerAuditJobs } from './modules/audit/audit.jobs.ts';
import { memberRoutes } from './modules/people/members.routes.ts';
import { invitationRoutes } from './modules/people/invitations.routes.ts';
import { registerBillingJobs } from './modules/billing/billing.jobs.ts';
import { registerEmailJobs } from './modules/email/email.jobs.ts';
import { registerAgentJobs } from './modules/agents/agents.jobs.ts';
import { installCollectionsAgent } from './modules/agents/collections-agent.ts';
import { refreshOnApprovalChange } from './modules/agents/notification-delivery.ts';
import { onApprovalChanged } from './modules/work-tasks/approval-state.service.ts';
import { registerMetricJobs } from './modules/metrics/metrics.jobs.ts';
import { registerKnowledgeJobs } from './modules/knowledge/knowledge.jobs.ts';
import { registerDocumentJobs } from './modules/documents/documents.jobs.ts';
import { webhookRoutes } from './modules/webhooks/webhooks.routes.ts';
import { registerWebhookJobs } from './modules/webhooks/webhooks.jobs.ts';
import { accessLog, loggerOptions, requestChildLogger, stdoutLog } from './platform/logging.ts';
import { DiskSpaceGuard } from './platform/disk-space.ts';
import { NO_METRICS } from './platform/observability/metrics.ts';
import { metricsRoute } from './platform/observability/metrics.routes.ts';
import { setHttpRoute, tracingActive } from './platform/observability/tracing.ts';

/**
 * The composition root: the one list of modules, each with its routes, its queues and what it installs
 * into another's extension points. Nothing else imports every module (ARCHITECTURE.md#layers); the
 * order is the order routes are registered in (and shown in the OpenAPI document).
 */
const MODULES: readonly AppModule[] = [
  { name: 'system', routes: [systemRoutes] },
  { name: 'me', routes: [async (app) => meRoutes(app), preferenceRoutes] },
  { name: 'sign-in', routes: [signInRoutes] },
  { name: 'api-keys', routes: [apiKeyRoutes] },
  { name: 'parties', routes: [partyRoutes] },
  { name: 'products', routes: [productRoutes] },
  { name: 'invoices', routes: [invoiceRoutes, invoiceListRoutes] },
  { name: 'invoice-documents', routes: [invoiceDocumentRoutes], jobs: configureInvoiceDocumentJobs },
  { name: 'billing', routes: [billingRoutes], jobs: registerBillingJobs },
  { name: 'attachments', routes: [attachmentRoutes] },
  { name: 'payments', routes: [paymentRoutes, creditNoteRoutes] },
  {
    name: 'email',
    routes: [emailAccountRoutes, emailDraftRoutes, emailPrepareRoutes],
    jobs: registerEmailJobs,
  },
  { name: 'search', routes: [searchRoutes] },
  {
    name: 'work-tasks',
    routes: [workTaskRoutes, approvalPolicyRoutes, approvalLinkRoutes],
    jobs: async (deps, log) => {
      await registerWorkTaskJobs(deps, log);
      await registerApprovalEmailJobs(deps, log);
    },
  },
  {
    name: 'agents',
    routes: [agentRoutes, agentRunRoutes],
    jobs: registerAgentJobs,
    install: () => {
      installCollectionsAgent();
      onApprovalChanged(refreshOnApprovalChange);
    },
  },
  { name: 'conversations', routes: [conversationRoutes] },
  { name: 'metrics', routes: [metricRoutes], jobs: registerMetricJobs },
  { name: 'knowledge', routes: [knowledgeRoutes], jobs: registerKnowledgeJobs },
  { name: 'documents', routes: [documentRoutes], jobs: registerDocumentJobs },
  { name: 'organization-settings', routes: [organizationSettingsRoutes] },
  { name: 'audit', routes: [auditRoutes], jobs: registerAuditJobs },
  { name: 'members', routes: [memberRoutes, invitationRoutes] },
  { name: 'webhooks', routes: [webhookRoutes], jobs: registerWebhookJobs },
  { name: 'slack', routes: [slackRoutes], jobs: registerSlackJobs },
  { name: 'storage', routes: [storageRoutes], jobs: registerObjectDeleteJobs },
  { name: 'idempotency', jobs: registerIdempotencyJobs },
];

let installed = false;
function installModules(): void {
  if (installed) return;
  installed = true;
  for (const module of MODULES) module.install?.();
}

/**
 * Declares every module's queues and workers on `deps.jobs` (a process that only serves HTTP still
 * declares them: it enqueues into them). Working them is `jobs.startWorkers()`.
 */
export async function registerJobs(deps: JobDeps, log: FastifyBaseLogger): Promise<void> {
  installModules();
  for (const module of MODULES) await module.jobs?.(deps, log);
}

type ValidatorFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']
>;

export interface BuildAppOptions {
  logger?: FastifyServerOptions['logger'];
  /** The built console (`npm run build` writes web/dist); a test may serve a folder of its own. */
  consoleDir?: string;
}

/** web/dist beside src/ (tsx) or dist/ (the bundle): both are one level below the repository. */
const DEFAULT_CONSOLE_DIR = path.resolve(import.meta.dirname, '../web/dist');

/** Fastify's request lines but for the two a request's one access line replaces (logging.ts). */
class AccessLineController extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null | undefined, ...rest: unknown[]): void {
    if (error) (super.requestCompleted as (...a: unknown[]) => void)(error, ...rest);
  }
}

/** Builds the app (it never listens): the server, the CLI's checks and the tests all start here. */
export async function buildApp(deps: AppDeps, options: BuildAppOptions = {}): Promise<App> {
  const compileValidator = schemaCompiler();
  const serializers = lazySharedSerializers();
  const logger = options.logger ?? loggerOptions(deps.config.logLevel, stdoutLog());
  const app = Fastify({
    // Given as the compiler factory rather than through app.setValidatorCompiler: a child scope
    // (app.register) builds its validators from the server options, and would otherwise fall back to
    // Fastify's default Ajv (which silently strips unknown fields instead of refusing them).
    schemaController: {
      compilersFactory: {
        // The factory's declared type is Ajv-specific; any FastifySchemaCompiler is what it must return.
        buildValidator: (() => compileValidator) as unknown as ValidatorFactory,
        buildSerializer: serializers,
      },
    },
    logger,
    bodyLimit: BODY_LIMITS.DEFAULT,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : crypto.randomUUID();
    },
    // One line per request, when it is answered (the onResponse hook below), instead of Fastify's two;
    // Fastify's error lines (a failed response, a stream that broke after its headers) stay.
    logController: new AccessLineController({ requestIdLogLabel: 'request_id' }),
    childLoggerFactory: requestChildLogger,
    return503OnClosing: false,
    // Behind a reverse proxy, per-address limits must use the client's address (X-Forwarded-For), but
    // only from proxies the operator named: otherwise any client could pick its own bucket.
    trustProxy:
      typeof deps.config.trustProxy === 'number'
        ? (
            (hops: number) => (_address: string, hop: number) =>
              hop < hops
          )(deps.config.trustProxy)
        : deps.config.trustProxy,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Validators and serializers compile on first use (fast start); this compiles every one now.
  app.decorate('compileSchemas', () => {
    compileValidator.compileAll();
    serializers.compileAll();
  });

  // First of all hooks: nothing a request runs may reach the database outside its role.
  registerDbRole(app);

  // The request's one log line, once it is answered (logging.ts).
  const logRequest = accessLog(logger);
  if (logRequest)
    app.addHook('onResponse', (request, reply, done) => {
      logRequest(request, reply);
      done();
    });

  // Requests are counted and named by route template (`/api/invoices/:uid`), never by raw URL: one
  // series per route, whatever ids the paths carry (docs/observability.md).
  const metrics = deps.metrics ?? NO_METRICS;
  if (metrics.enabled) {
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }
  if (tracingActive()) {
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.routeOptions.url) setHttpRoute(request.routeOptions.url);
      done();
    });
  }

  // Every route as registered, so a test can prove the OpenAPI document leaves none out (and how it is
  // reached: the scope rule, route-rules.ts).
  const routeList: RouteAccess[] = [];
  app.decorate('routeList', routeList);
  app.addHook('onRoute', (route) => {
    applyQueryRules(route);
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      const { public: isPublic, scope } = route.config ?? {};
      routeList.push({ method: String(method), url: route.url, public: isPublic, scope });
    }
  });

  // On shutdown, requests still in flight are answered with `Connection: close`, so their keep-alive
  // sockets end with the response instead of holding the server open.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Callback-style hooks: these run on every request, and skip a promise each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    // A request that arrives on an open keep-alive socket during shutdown gets the one error body.
    if (closing) {
      reply.header('Connection', 'close');
      done(new AppError('service_unavailable', 'The server is shutting down; retry on another instance'));
      return;
    }
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('Connection', 'close');
    done(null, payload);
  });

  registerErrorHandling(app);
  app.addSchema(ErrorBody);

  const diskSpace = deps.diskSpace ?? new DiskSpaceGuard(deps.config.dataDir, deps.config.minFreeDiskBytes);
  app.decorate('diskSpace', diskSpace);
  // Writes are refused before a byte of their body is read while the disk is low; reads go on.
  // Callback-style, so a read (most requests) costs no promise here.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') {
      done();
      return;
    }
    diskSpace.isLow().then(
      (low) =>
        done(
          low
            ? new AppError(
                'storage_full',
                'The server is out of disk space: writes are refused until space is freed; reads still work',
              )
            : undefined,
        ),
      (error: unknown) => done(error as Error),
    );
  });
  // JSON routes take JSON only: Fastify's default text/plain parser would hand a string to a route that
  // expects an object (answered 422 "must be object" instead of 415).
  app.removeContentTypeParser('text/plain');
  // JSON bodies: Fastify's parser, after refusing nesting past MAX_JSON_DEPTH (json-body.ts).
  registerJsonParser(app);

  await registerSecurityHeaders(app, { corsOrigins: deps.config.corsOrigins });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Remit API',
        version: '0.1.0',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
        description:
          'Invoices, collections email, work tasks and human-in-the-loop approvals, agents, knowledge, metrics and search. ' +
          'Every error answers the ErrorBody schema.',
      },
      // Only the scheme, host and port of PUBLIC_BASE_URL are used for the addresses the service hands
      // out (docs/configuration.md); the document's paths are relative to that origin.
      servers: [
        {
          url: new URL(deps.config.publicBaseUrl).origin,
          description: 'This service, at its PUBLIC_BASE_URL',
        },
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer rk_live_…' },
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            // `__Host-remit_session` over HTTPS (docs/people.md#the-cookie).
            name: 'remit_session',
            description:
              'A person signed in with POST /api/auth/sign-in; unsafe methods also send X-CSRF-Token (docs/people.md)',
          },
        },
        ...sharedHeaderComponents,
      },
      security: [{ bearerAuth: [] }, { sessionCookie: [] }],
      tags: API_TAGS,
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}`,
    },
    transform: documentRoute,
    transformObject: documentHeaders,
  });
  // The human docs at /docs: Swagger UI is loaded on their first request, not at start (api-docs.ts).
  registerApiDocs(app);

  const lastUsed = new LastUsedRecorder(deps.database.db, (error) =>
    app.log.warn({ err: error }, 'last_used_at write failed'),
  );
  app.decorate('lastUsed', lastUsed);
  app.addHook('onClose', async () => lastUsed.close());

  const sessionActivity = new SessionActivityRecorder(deps.database.db, (error) =>
    app.log.warn({ err: error }, 'session last_seen_at write failed'),
  );
  app.addHook('onClose', async () => sessionActivity.close());

  const membershipCache = new MembershipCache();
  const sessionMembershipCache = new MembershipCache();
  const principals = startKeyAuthCache(deps.database.notifications, deps.config.authCacheTtlS);
  if (principals) app.addHook('onClose', async () => principals.stop());
  app.decorate('keyAuthCache', principals?.cache ?? null);
  const invoiceViews = startInvoiceViewCache(deps.database.notifications, deps.config.invoiceCacheTtlS);
  if (invoiceViews) app.addHook('onClose', async () => invoiceViews.stop());
  app.decorate('invoiceViewCache', invoiceViews?.cache ?? null);
  await app.register(authPlugin, {
    authenticate: (key) =>
      authenticate(deps.database, deps.config.apiKeyPepper, key, membershipCache, principals?.cache),
    authenticateSession: (token) =>
      authenticateSession(deps.database, deps.config.people.sessionIdleS, token, sessionMembershipCache),
    rateLimiter: deps.rateLimiter,
    onAuthenticated: ({ credential }) => {
      if (credential.kind === 'api_key') lastUsed.mark(credential.uid);
      else if (credential.kind === 'session') sessionActivity.mark(credential.uid);
    },
  });
  // Before idempotency's own preHandler: a failed body is answered after authorization and existence.
  registerCheckOrder(app);
  await app.register(idempotencyPlugin, { db: deps.database.db });
  // `organization_uid` is accepted on every route (applyQueryRules); naming an organization the caller
  // is not a member of is refused the same way everywhere, also where the route does not use it.
  app.addHook('preHandler', (request, _reply, done) => {
    // After a failed validation the query may be unvalidated: check-order.ts validates it, then checks.
    if (request.validationError) {
      done();
      return;
    }
    const explicit = (request.query as { organization_uid?: string } | undefined)?.organization_uid;
    if (explicit && request.principal) {
      try {
        resolveMembership(request.principal, explicit);
      } catch (error) {
        done(error as Error);
        return;
      }
    }
    done();
  });

  installModules();
  for (const module of MODULES) {
    for (const routes of module.routes ?? []) await routes(app, deps);
  }
  // Every API route that takes a credential declares the scope a key needs, or is listed with the reason
  // it needs none (UNSCOPED_ROUTES): one that forgot would be open to a key of any scope.
  const { undeclared } = scopeRuleProblems(routeList);
  if (undeclared.length > 0) {
    throw new Error(
      `API routes without a scope (give each config.scope, or list it with the reason in UNSCOPED_ROUTES, src/platform/http/route-rules.ts): ${undeclared.join(', ')}`,
    );
  }
  // With a metrics port of its own, the API's port does not serve them (server.ts starts that one).
  const { token, port } = deps.config.metrics;
  if (metrics.enabled && token !== undefined && port === undefined) metricsRoute(app, metrics, token);
  // The console is a client of the routes above, served as static files (docs/console.md).
  await registerConsole(app, {
    root: options.consoleDir ?? DEFAULT_CONSOLE_DIR,
    uploadOrigin: storageUploadOrigin(deps.config),
  });

  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    lastUsed: LastUsedRecorder;
    /** API keys' principals held after authentication; null when AUTH_CACHE_TTL_S is 0. */
    keyAuthCache: KeyAuthCache | null;
    /** Invoices' views held after `GET /api/invoices/{uid}`; null when INVOICE_CACHE_TTL_S is 0. */
    invoiceViewCache: InvoiceViewCache | null;
    /** Requests held by `GET /api/work-tasks/{uid}?wait=N` until the approval is decided. */
    taskWaiters: TaskStatusWaiters;
    diskSpace: DiskSpaceGuard;
    routeList: RouteAccess[];
    compileSchemas(): void;
  }
}
