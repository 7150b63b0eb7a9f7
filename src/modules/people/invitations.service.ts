import type { Config } from '../../config.ts';
import type { Db } from '../../platform/db/client.ts';
import { isUniqueViolation } from '../../platform/db/errors.ts';
import { afterCommit } from '../../platform/db/request-scope.ts';
import { asService } from '../../platform/db/session-role.ts';
import {
  actorOf,
  requireAdmin,
  type CallOrigin,
  type Principal,
  type RequestContext,
} from '../../platform/http/context.ts';
import { changesBetween, recordAuditEvent, recordAuditEvents } from '../audit/audit.service.ts';
import { AppError, notFound, validationFailed } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import type { Role } from '../../platform/http/scopes.ts';
import type { MailTransports } from '../../platform/mail/mailer.ts';
import * as tenancy from '../tenancy/tenancy.service.ts';
import * as repo from './invitations.repository.ts';
import type { AcceptInvitationBodyT, CreateInvitationBodyT } from './invitations.schemas.ts';
import type { InvitationStatus } from './invitations.tables.ts';
import { hashPassword, passwordProblem } from './passwords.ts';
import { sendSystemMail } from './system-mail.ts';
import { hashSecretToken, newSecretToken } from './secret-tokens.ts';
import * as signIn from './sign-in.repository.ts';

export interface InvitationDeps {
  db: Db;
  config: Pick<Config, 'publicBaseUrl' | 'mailFrom' | 'people'>;
  mail: MailTransports;
}

// ---- views ----

export interface InvitationView {
  uid: string;
  organization_uid: string;
  email: string;
  role: Role;
  status: InvitationStatus;
  invited_by_user_uid: string | null;
  expires_at: Date;
  last_sent_at: Date;
  accepted_at: Date | null;
  accepted_by_user_uid: string | null;
  revoked_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

function view(row: repo.InvitationWithStatus): InvitationView {
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    email: row.email,
    role: row.role,
    status: row.status,
    invited_by_user_uid: row.invitedByUserUid,
    expires_at: row.expiresAt,
    last_sent_at: row.lastSentAt,
    accepted_at: row.acceptedAt,
    accepted_by_user_uid: row.acceptedByUserUid,
    revoked_at: row.revokedAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

// ---- the admin's side ----

export async function listInvitations(
  db: Db,
  ctx: RequestContext,
  query: { status?: InvitationStatus | undefined },
  page: PageRequest,
) {
  requireAdmin(ctx);
  const { rows, total } = await repo.listInvitations(db, ctx.organizationUid, {
    status: query.status,
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map(view), total };
}

function normalizedEmail(email: string): string {
  try {
    return tenancy.normalizeEmail(email);
  } catch {
    throw validationFailed('email', `email must be an email address`);
  }
}

const expiry = (deps: InvitationDeps) => new Date(Date.now() + deps.config.people.invitationTtlS * 1000);

/**
 * Admins only. One open invitation per address: a pending one is a 409 (resend it instead), an expired
 * one is replaced (revoked) by the new one; a member's address is a 409. The email leaves after the
 * commit; if it cannot be sent the invitation stands and the answer says to resend it.
 */
export async function createInvitation(
  deps: InvitationDeps,
  ctx: RequestContext,
  body: CreateInvitationBodyT,
): Promise<InvitationView> {
  requireAdmin(ctx);
  const email = normalizedEmail(body.email);
  const org = ctx.organizationUid;
  const { token, tokenHash } = newSecretToken();
  const row = await deps.db.transaction(async (tx) => {
    const user = await tenancy.findUserByEmail(tx, email);
    if (user && (await tenancy.findMembership(tx, org, user.uid))) {
      throw new AppError('already_exists', `${email} is already a member of this organization`);
    }
    const open = await repo.findOpenInvitation(tx, org, email);
    if (open?.status === 'pending') {
      throw new AppError(
        'already_exists',
        `${email} already has a pending invitation (${open.uid}); resend it to send a new link`,
      );
    }
    if (open) await repo.revokeInvitation(tx, org, open.uid);
    try {
      const created = await repo.insertInvitation(tx, {
        organizationUid: org,
        email,
        role: body.role,
        tokenHash,
        invitedByUserUid: ctx.principal.user.uid,
        expiresAt: expiry(deps),
      });
      await recordAuditEvent(tx, ctx, {
        organizationUid: org,
        action: 'invitation.created',
        entityUid: created.uid,
        changes: changesBetween(null, { email, role: body.role, expires_at: created.expiresAt }),
      });
      return created;
    } catch (error) {
      if (isUniqueViolation(error, 'invitations_open_email_key')) {
        throw new AppError('already_exists', `${email} already has a pending invitation`);
      }
      throw error;
    }
  });
  await afterCommit(() => sendInvitation(deps, ctx, row, token));
  return view(row);
}

/**
 * Admins only: a new token and a new expiry for a pending or expired invitation, emailed again. The old
 * link stops working at once (its hash is gone).
 */
export async function resendInvitation(
  deps: InvitationDeps,
  ctx: RequestContext,
  uid: string,
): Promise<InvitationView> {
  requireAdmin(ctx);
  const org = ctx.organizationUid;
  const { token, tokenHash } = newSecretToken();
  const row = await deps.db.transaction(async (tx) => {
    const invitation = await repo.findInvitation(tx, org, uid, { forUpdate: true });
    if (!invitation) throw notFound('Invitation');
    if (invitation.status === 'accepted' || invitation.status === 'revoked') {
      throw new AppError(
        'invalid_state',
        `This invitation was ${invitation.status}; ${invitation.status === 'revoked' ? 'invite the address again' : 'there is nothing to resend'}`,
      );
    }
    const renewed = await repo.renewInvitation(tx, org, uid, { tokenHash, expiresAt: expiry(deps) });
    await recordAuditEvent(tx, ctx, {
      organizationUid: org,
      action: 'invitation.resent',
      entityUid: uid,
      changes: { expires_at: { before: invitation.expiresAt, after: renewed?.expiresAt ?? null } },
    });
    return renewed;
  });
  if (!row) throw notFound('Invitation');
  await afterCommit(() => sendInvitation(deps, ctx, row, token));
  return view(row);
}

/** Admins only. Revoking twice answers the invitation with its first `revoked_at`; an accepted one is 409. */
export async function revokeInvitation(db: Db, ctx: RequestContext, uid: string): Promise<InvitationView> {
  requireAdmin(ctx);
  const org = ctx.organizationUid;
  return db.transaction(async (tx) => {
    const invitation = await repo.findInvitation(tx, org, uid, { forUpdate: true });
    if (!invitation) throw notFound('Invitation');
    if (invitation.status === 'accepted') {
      throw new AppError('invalid_state', 'This invitation was already accepted; remove the member instead');
    }
    if (invitation.revokedAt) return view(invitation);
    const revoked = await repo.revokeInvitation(tx, org, uid);
    await recordAuditEvent(tx, ctx, {
      organizationUid: org,
      action: 'invitation.revoked',
      entityUid: uid,
      changes: { revoked_at: { before: null, after: revoked?.revokedAt ?? null } },
    });
    return view(revoked ?? invitation);
  });
}

async function sendInvitation(
  deps: InvitationDeps,
  ctx: RequestContext,
  invitation: repo.InvitationWithStatus,
  token: string,
): Promise<void> {
  const organization =
    ctx.principal.memberships.find((m) => m.organizationUid === invitation.organizationUid)
      ?.organizationName ?? 'an organization';
  const inviter = ctx.principal.user.fullName || ctx.principal.user.email;
  const link = `${deps.config.publicBaseUrl}/accept-invitation?token=${token}`;
  try {
    await sendSystemMail(deps, {
      to: invitation.email,
      subject: `${inviter} invited you to ${organization} on Remit`,
      text: [
        `${inviter} invited you to join ${organization} on Remit as ${invitation.role === 'admin' ? 'an admin' : 'a member'}.`,
        '',
        `Accept the invitation: ${link}`,
        '',
        `The link works once and expires on ${invitation.expiresAt.toISOString()}.`,
        'If you did not expect this invitation, you can ignore this email.',
      ].join('\n'),
    });
  } catch (error) {
    const failure = new AppError(
      'bad_gateway',
      `The invitation ${invitation.uid} is saved, but the email to ${invitation.email} could not be sent; resend the invitation`,
    );
    failure.cause = error;
    throw failure;
  }
}

// ---- the invitee's side (public routes: no organization is known before the token is) ----

/** Unknown and revoked links answer alike; an accepted or expired one says so. */
function assertUsable(
  invitation: repo.PresentedInvitation | undefined,
): asserts invitation is repo.PresentedInvitation {
  if (!invitation || invitation.status === 'revoked') throw notFound('Invitation');
  if (invitation.status === 'accepted') {
    throw new AppError('invalid_state', 'This invitation was already accepted: an invitation works once');
  }
  if (invitation.status === 'expired') {
    throw new AppError(
      'token_expired',
      'This invitation has expired; ask an admin of the organization to send it again',
    );
  }
}

/**
 * Reads the invitation a token names. The caller's organizations (if any) do not include the
 * invitation's before it is accepted, so this read steps out of row-level security; the token's hash,
 * matched by a unique index, is what entitles it.
 */
async function findPresented(db: Db, token: string) {
  const tokenHash = hashSecretToken(token);
  return asService(async () => await repo.findByTokenHash(db, tokenHash));
}

export interface PresentedInvitationView {
  organization_uid: string;
  organization_name: string;
  email: string;
  role: Role;
  expires_at: Date;
  invited_by_name: string | null;
  account_exists: boolean;
}

export async function presentInvitation(db: Db, token: string): Promise<PresentedInvitationView> {
  const invitation = await findPresented(db, token);
  assertUsable(invitation);
  return {
    organization_uid: invitation.organizationUid,
    organization_name: invitation.organizationName,
    email: invitation.email,
    role: invitation.role,
    expires_at: invitation.expiresAt,
    invited_by_name: invitation.invitedByName,
    account_exists: invitation.accountExists,
  };
}

export interface AcceptedInvitationView {
  organization_uid: string;
  organization_name: string;
  role: Role;
  user_uid: string;
  email: string;
  account_created: boolean;
}

// A 409, not a 401: nothing the caller sent failed authentication, and the account is what exists.
const signInFirst = () =>
  new AppError(
    'already_exists',
    'An account with this email address already exists: sign in as that user, then accept the invitation',
  );

/**
 * Accepts an invitation, once. Without a caller it creates the user (name, password) and the
 * membership; an address that already has a user must be accepted by that user, signed in (whatever
 * authenticated `principal`), and gains the membership. Everything is written in one transaction that
 * re-checks the invitation under its row lock, so two acceptances of one link cannot both succeed.
 */
export async function acceptInvitation(
  db: Db,
  principal: Principal | null,
  body: AcceptInvitationBodyT,
  origin: CallOrigin,
): Promise<AcceptedInvitationView> {
  const first = await findPresented(db, body.token);
  assertUsable(first);
  let newUser: { fullName: string; passwordHash: string } | null = null;
  if (principal) {
    for (const field of ['full_name', 'password'] as const) {
      if (body[field] !== undefined) {
        throw validationFailed(
          field,
          `${field} is only for a new user: signed in, accepting adds the membership to your user as it is`,
        );
      }
    }
    if (principal.user.email.trim().toLowerCase() !== first.email) {
      throw new AppError(
        'forbidden',
        `This invitation is for another email address than ${principal.user.email}; sign in as the invited user`,
      );
    }
  } else {
    if (first.accountExists) throw signInFirst();
    const fullName = body.full_name?.trim() ?? '';
    if (fullName.length === 0) throw validationFailed('full_name', 'full_name is required for a new user');
    if (body.password === undefined) {
      throw validationFailed('password', 'password is required for a new user');
    }
    const problem = passwordProblem(body.password, first.email);
    if (problem) throw validationFailed('password', `password ${problem}`);
    // Hashed before the transaction: argon2 takes tens of milliseconds, the row lock should not.
    newUser = { fullName, passwordHash: await hashPassword(body.password) };
  }
  const tokenHash = hashSecretToken(body.token);
  // As the service: the membership, user and credentials written here are outside the caller's
  // organizations (an anonymous caller has none); the token is the authority, checked again under lock.
  return asService(() =>
    db.transaction(async (tx) => {
      const invitation = await repo.findByTokenHash(tx, tokenHash, { forUpdate: true });
      assertUsable(invitation);
      const org = invitation.organizationUid;
      let userUid: string;
      if (principal) {
        userUid = principal.user.uid;
        if (await tenancy.findMembership(tx, org, userUid)) {
          throw new AppError('already_exists', `You are already a member of ${invitation.organizationName}`);
        }
      } else {
        if (await tenancy.findUserByEmail(tx, invitation.email)) throw signInFirst();
        const user = await tenancy.createUser(tx, invitation.email, newUser!.fullName).catch((error) => {
          throw isUniqueViolation(error, 'users_email_key') ? signInFirst() : error;
        });
        await signIn.updateCredentials(tx, user.uid, {
          passwordHash: newUser!.passwordHash,
          passwordChangedAt: new Date(),
        });
        userUid = user.uid;
      }
      await tenancy.joinOrganization(tx, org, userUid, invitation.role);
      const accepted = await repo.markAccepted(tx, org, invitation.uid, userUid);
      if (!accepted) throw new AppError('invalid_state', 'This invitation was already accepted');
      // The person accepting is the actor: the invited user (new or signed in), whatever credential.
      const acceptedBy = principal ? actorOf(principal) : ({ type: 'user', uid: userUid, userUid } as const);
      await recordAuditEvents(tx, { ...origin, actor: acceptedBy }, [
        {
          organizationUid: org,
          action: 'invitation.accepted',
          entityUid: invitation.uid,
          changes: { accepted_by_user_uid: { before: null, after: userUid } },
        },
        {
          organizationUid: org,
          action: 'member.added',
          entityUid: userUid,
          changes: changesBetween(null, {
            email: invitation.email,
            role: invitation.role,
            invitation_uid: invitation.uid,
            account_created: principal === null,
          }),
        },
      ]);
      return {
        organization_uid: org,
        organization_name: invitation.organizationName,
        role: invitation.role,
        user_uid: userUid,
        email: invitation.email,
        account_created: principal === null,
      };
    }),
  );
}
