import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { envelope } from '../../platform/http/envelope.ts';
import { AppError } from '../../platform/http/errors.ts';
import { DateTime, Envelope, errorResponses, literals, Nullable, Uuid } from '../../platform/http/schemas.ts';
import {
  clearSessionCookie,
  csrfTokenFor,
  readSessionCookie,
  setSessionCookie,
} from '../../platform/http/session-cookie.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { PASSWORD_MAX_LENGTH } from './passwords.ts';
import * as service from './sign-in.service.ts';

const Email = Type.String({ minLength: 3, maxLength: 320, format: 'email' });
const Password = Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH });
const TotpCode = Type.String({
  pattern: '^[0-9]{6}$',
  description: 'The six-digit code of the authenticator app',
});
const Token = Type.String({ minLength: 1, maxLength: 128 });

const Session = Type.Object({
  uid: Uuid,
  created_at: DateTime,
  last_seen_at: DateTime,
  expires_at: DateTime,
  ip_address: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  method: literals(['password', 'sign_in_link', 'invitation'] as const),
  revoked_at: Nullable(DateTime),
  current: Type.Boolean(),
});
const SignedIn = Type.Object({
  user: Type.Object({
    uid: Uuid,
    email: Type.String(),
    full_name: Type.String(),
    totp_enabled: Type.Boolean({ description: 'The account has a second factor (TOTP) on' }),
  }),
  session: Session,
  csrf_token: Type.String({ description: 'Send it as X-CSRF-Token with every POST, PUT, PATCH and DELETE' }),
});
const Done = Type.Object({ done: Type.Boolean() });

const client = (request: FastifyRequest): service.ClientInfo => ({
  ip: request.ip,
  userAgent: request.headers['user-agent'],
});

const NO_STORE = 'no-store';

/**
 * The person's own account (sessions, password, second factor), not an organization's work: the
 * Idempotency-Key clients send with every POST is accepted and nothing is kept (IdempotencyMode `none`,
 * src/platform/http/idempotency.ts).
 */
const PERSONAL = { idempotency: 'none' } as const;

/** The person's own sign-in: a session only, never an API key (auth.ts, `sessionOnly`). */
const OWN_SIGN_IN = { sessionOnly: true } as const;

export async function signInRoutes(app: App, deps: AppDeps) {
  const signIn: service.SignInDeps = {
    database: deps.database,
    config: deps.config,
    secrets: deps.secrets,
    mail: deps.clients.mail,
  };
  const tags = ['Sign-in'];

  /** Sets the cookie and answers what the console needs to carry on. */
  const signedIn = (
    request: FastifyRequest,
    reply: FastifyReply,
    opened: service.NewSession,
    message: string,
  ) => {
    setSessionCookie(request, reply, opened.token, deps.config.people.sessionMaxAgeS);
    reply.header('Cache-Control', NO_STORE);
    return envelope(
      {
        user: {
          uid: opened.user.uid,
          email: opened.user.email,
          full_name: opened.user.fullName,
          totp_enabled: opened.user.totpEnabled,
        },
        session: { ...service.sessionView(signIn, opened.session), current: true },
        csrf_token: csrfTokenFor(opened.token),
      },
      message,
    );
  };

  app.post(
    '/api/auth/sign-in',
    {
      config: { public: true, errors: ['invalid_credentials', 'second_factor_missing', 'rate_limited'] },
      schema: {
        operationId: 'signIn',
        tags,
        summary:
          'Sign in with email and password (and a TOTP code when the account has one); sets the session cookie',
        security: [],
        body: Type.Object(
          { email: Email, password: Password, totp_code: Type.Optional(TotpCode) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(SignedIn), ...errorResponses },
      },
    },
    async (request, reply) => {
      const opened = await service.signInWithPassword(
        signIn,
        { email: request.body.email, password: request.body.password, totpCode: request.body.totp_code },
        client(request),
      );
      return signedIn(request, reply, opened, 'Signed in');
    },
  );

  app.post(
    '/api/auth/sign-out',
    {
      config: { ...PERSONAL, ...OWN_SIGN_IN },
      schema: {
        operationId: 'signOut',
        tags,
        summary: 'End this session and clear its cookie (a sign-in session only)',
        response: { 200: Envelope(Done), ...errorResponses },
      },
    },
    async (request, reply) => {
      await service.signOut(deps.database, request.principal!);
      clearSessionCookie(request, reply);
      return envelope({ done: true }, 'Signed out');
    },
  );

  app.get(
    '/api/auth/session',
    {
      schema: {
        operationId: 'getSession',
        tags,
        summary: 'The current sign-in session and its anti-forgery token',
        response: { 200: Envelope(SignedIn), ...errorResponses },
      },
      config: { ...OWN_SIGN_IN, errors: ['not_found'] },
    },
    async (request, reply) => {
      const principal = request.principal!;
      const token = readSessionCookie(request);
      if (principal.credential.kind !== 'session' || !token) {
        throw new AppError(
          'session_required',
          'This request is authenticated with an API key, not a sign-in session',
        );
      }
      const current = await service.currentSession(signIn, principal);
      reply.header('Cache-Control', NO_STORE);
      return envelope(
        {
          user: {
            uid: principal.user.uid,
            email: principal.user.email,
            full_name: principal.user.fullName,
            // Read by this request's authentication (the session's one statement).
            totp_enabled: principal.totpEnabled === true,
          },
          session: current,
          csrf_token: csrfTokenFor(token),
        },
        'Current session',
      );
    },
  );

  app.get(
    '/api/auth/sessions',
    {
      schema: {
        operationId: 'listSessions',
        tags,
        summary: 'My sessions that are still open, newest first',
        response: { 200: Envelope(Type.Object({ items: Type.Array(Session) })), ...errorResponses },
      },
      config: OWN_SIGN_IN,
    },
    async (request) =>
      envelope({ items: await service.listSessions(signIn, request.principal!) }, 'Sessions'),
  );

  app.delete(
    '/api/auth/sessions/:uid',
    {
      schema: {
        operationId: 'revokeSession',
        tags,
        summary: 'Sign out one of my sessions (another device)',
        params: Type.Object({ uid: Uuid }),
        response: { 200: Envelope(Session), ...errorResponses },
      },
      config: { ...OWN_SIGN_IN, errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.revokeOwnSession(signIn, request.principal!, request.params.uid),
        'Session signed out',
      ),
  );

  app.post(
    '/api/auth/sessions/revoke-all',
    {
      config: { ...PERSONAL, ...OWN_SIGN_IN },
      schema: {
        operationId: 'revokeAllSessions',
        tags,
        summary: 'Sign out everywhere: every session of mine (keep_current: all but this one)',
        body: Type.Object(
          { keep_current: Type.Optional(Type.Boolean({ default: false })) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Type.Object({ revoked: Type.Integer() })), ...errorResponses },
      },
    },
    async (request, reply) => {
      const keepCurrent = request.body.keep_current ?? false;
      const revoked = await service.revokeAllSessions(signIn, request.principal!, keepCurrent);
      if (!keepCurrent) clearSessionCookie(request, reply);
      return envelope({ revoked }, 'Signed out everywhere');
    },
  );

  app.post(
    '/api/auth/password',
    {
      schema: {
        operationId: 'changePassword',
        tags,
        summary:
          'Change my password (every session ends; a session that asks goes on as a new one, with a new anti-forgery token)',
        body: Type.Object(
          { current_password: Password, new_password: Password },
          { additionalProperties: false },
        ),
        response: {
          200: Envelope(
            Type.Object({
              done: Type.Boolean(),
              csrf_token: Nullable(
                Type.String({
                  description:
                    "The new session's anti-forgery token (its cookie is set with this answer); send it as X-CSRF-Token from now on. never null (a sign-in session only)",
                }),
              ),
            }),
          ),
          ...errorResponses,
        },
      },
      config: { ...PERSONAL, ...OWN_SIGN_IN, errors: ['invalid_credentials', 'rate_limited'] },
    },
    async (request, reply) => {
      const opened = await service.changePassword(
        signIn,
        request.principal!,
        { currentPassword: request.body.current_password, newPassword: request.body.new_password },
        client(request),
      );
      if (!opened) return envelope({ done: true, csrf_token: null }, 'Password changed');
      // The old session ended with the change: the page needs the new one's token for its next write.
      setSessionCookie(request, reply, opened.token, deps.config.people.sessionMaxAgeS);
      reply.header('Cache-Control', NO_STORE);
      return envelope({ done: true, csrf_token: csrfTokenFor(opened.token) }, 'Password changed');
    },
  );

  const emailed = Type.Object({ email: Email }, { additionalProperties: false });
  const accepted = Envelope(Type.Object({ email: Type.String() }));

  app.post(
    '/api/auth/password-reset',
    {
      config: { public: true, errors: ['rate_limited', 'bad_gateway'] },
      schema: {
        operationId: 'requestPasswordReset',
        tags,
        summary: 'Email a password reset link (answers the same whether or not the address has an account)',
        security: [],
        body: emailed,
        response: { 202: accepted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await service.requestPasswordReset(signIn, request.body.email, client(request));
      reply.code(202);
      return envelope(
        { email: request.body.email },
        'If this address has an account, a reset link is on its way',
        202,
      );
    },
  );

  app.post(
    '/api/auth/password-reset/confirm',
    {
      config: { public: true, errors: ['invalid_token', 'token_used', 'token_expired'] },
      schema: {
        operationId: 'confirmPasswordReset',
        tags,
        summary: 'Set a new password with the emailed link (every session ends)',
        security: [],
        body: Type.Object({ token: Token, password: Password }, { additionalProperties: false }),
        response: { 200: Envelope(Done), ...errorResponses },
      },
    },
    async (request) => {
      await service.resetPassword(signIn, request.body.token, request.body.password);
      return envelope({ done: true }, 'Password set; sign in with it');
    },
  );

  app.post(
    '/api/auth/sign-in-link',
    {
      config: { public: true, errors: ['rate_limited', 'bad_gateway'] },
      schema: {
        operationId: 'requestSignInLink',
        tags,
        summary: 'Email a one-time sign-in link (answers the same whether or not the address has an account)',
        security: [],
        body: emailed,
        response: { 202: accepted, ...errorResponses },
      },
    },
    async (request, reply) => {
      await service.requestSignInLink(signIn, request.body.email, client(request));
      reply.code(202);
      return envelope(
        { email: request.body.email },
        'If this address has an account, a sign-in link is on its way',
        202,
      );
    },
  );

  app.post(
    '/api/auth/sign-in-link/confirm',
    {
      config: {
        public: true,
        errors: [
          'invalid_token',
          'token_used',
          'token_expired',
          'invalid_credentials',
          'second_factor_missing',
          'rate_limited',
        ],
      },
      schema: {
        operationId: 'confirmSignInLink',
        tags,
        summary: 'Sign in with the emailed link (and a TOTP code when the account has one)',
        security: [],
        body: Type.Object(
          { token: Token, totp_code: Type.Optional(TotpCode) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(SignedIn), ...errorResponses },
      },
    },
    async (request, reply) => {
      const opened = await service.signInWithLink(
        signIn,
        request.body.token,
        request.body.totp_code,
        client(request),
      );
      return signedIn(request, reply, opened, 'Signed in');
    },
  );

  app.post(
    '/api/auth/totp/setup',
    {
      schema: {
        operationId: 'setUpTotp',
        tags,
        summary: 'Start setting up a TOTP second factor: a new secret for the authenticator app',
        response: {
          200: Envelope(Type.Object({ secret: Type.String(), otpauth_uri: Type.String() })),
          ...errorResponses,
        },
      },
      config: { ...PERSONAL, ...OWN_SIGN_IN, errors: ['not_found', 'conflict'] },
    },
    async (request, reply) => {
      reply.header('Cache-Control', NO_STORE);
      return envelope(await service.setupTotp(signIn, request.principal!), 'Scan the code, then confirm one');
    },
  );

  app.post(
    '/api/auth/totp/enable',
    {
      schema: {
        operationId: 'enableTotp',
        tags,
        summary: 'Turn the second factor on with a current code from the app',
        body: Type.Object({ code: TotpCode }, { additionalProperties: false }),
        response: { 200: Envelope(Done), ...errorResponses },
      },
      config: { ...PERSONAL, ...OWN_SIGN_IN, errors: ['invalid_state', 'conflict'] },
    },
    async (request) => {
      await service.enableTotp(signIn, request.principal!, request.body.code);
      return envelope({ done: true }, 'Second factor on');
    },
  );

  app.post(
    '/api/auth/totp/disable',
    {
      schema: {
        operationId: 'disableTotp',
        tags,
        summary: 'Turn the second factor off (a current code, or the password)',
        body: Type.Object(
          { code: Type.Optional(TotpCode), password: Type.Optional(Password) },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Done), ...errorResponses },
      },
      config: {
        ...PERSONAL,
        ...OWN_SIGN_IN,
        errors: ['invalid_state', 'invalid_credentials', 'rate_limited'],
      },
    },
    async (request) => {
      await service.disableTotp(signIn, request.principal!, request.body, client(request));
      return envelope({ done: true }, 'Second factor off');
    },
  );
}
