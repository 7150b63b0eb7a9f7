import crypto from 'node:crypto';
import type { Db } from '../../platform/db/client.ts';
import type { SecretBox } from '../../platform/secrets/secret-box.ts';
import { isUniqueViolation } from '../../platform/db/errors.ts';
import { memberOrganizationUids, requireAdmin, type RequestContext } from '../../platform/http/context.ts';
import { AppError, notFound, validationFailed } from '../../platform/http/errors.ts';
import { offsetOf, type PageRequest } from '../../platform/http/pagination.ts';
import { parseSmtpUrl, resolvePublicHost, SmtpUrlError } from '../../platform/mail/mailer.ts';
import * as repo from './email-accounts.repository.ts';
import { changesBetween, recordAuditEvent } from '../audit/audit.service.ts';
import type { CreateEmailAccountBodyT } from './email-accounts.schemas.ts';

export interface EmailAccountOptions {
  allowPrivateNetworkTargets: boolean;
  secrets: SecretBox;
}

/** What an account's sealed SMTP URL is bound to: this column of this account's row. */
export const smtpUrlPurpose = (accountUid: string) => `email_accounts.smtp_url:${accountUid}`;

export function toEmailAccountView(row: repo.EmailAccountRow, secrets: SecretBox) {
  const smtp = row.smtpUrl ? parseSmtpUrl(secrets.open(row.smtpUrl, smtpUrlPurpose(row.uid))) : undefined;
  return {
    uid: row.uid,
    organization_uid: row.organizationUid,
    email: row.email,
    display_name: row.displayName,
    has_smtp_url: smtp !== undefined,
    smtp_host: smtp?.host ?? null,
    smtp_port: smtp?.port ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
export type EmailAccountView = ReturnType<typeof toEmailAccountView>;

/**
 * An organization's SMTP server is an outbound address it configures, like a billing endpoint: it must
 * be smtp:// or smtps:// and must not point into the service's own network (checked here, and again on
 * the address connected to at each send).
 */
async function checkSmtpUrl(raw: string, options: EmailAccountOptions): Promise<string> {
  try {
    const parsed = parseSmtpUrl(raw.trim());
    if (!options.allowPrivateNetworkTargets) await resolvePublicHost(parsed.host);
  } catch (error) {
    const message = error instanceof SmtpUrlError ? error.message : 'the host name does not resolve';
    throw validationFailed('smtp_url', `smtp_url ${message}`);
  }
  return raw.trim();
}

/** Admins only: an account decides who mail appears to come from, and may hold SMTP credentials. */
export async function createEmailAccount(
  db: Db,
  ctx: RequestContext,
  body: CreateEmailAccountBodyT,
  options: EmailAccountOptions,
): Promise<EmailAccountView> {
  requireAdmin(ctx);
  const smtpUrl = body.smtp_url === undefined ? null : await checkSmtpUrl(body.smtp_url, options);
  const uid = crypto.randomUUID();
  try {
    // In a transaction: the route is `deferred` (the SMTP host was looked up above, outside it).
    const row = await db.transaction(async (tx) => {
      const inserted = await repo.insertAccount(tx, {
        uid,
        organizationUid: ctx.organizationUid,
        email: body.email.trim(),
        displayName: body.display_name.trim(),
        // Sealed: the URL carries the SMTP password (docs/security.md#secrets-at-rest).
        smtpUrl: smtpUrl === null ? null : options.secrets.seal(smtpUrl, smtpUrlPurpose(uid)),
      });
      // smtp_url shows only as "[redacted]" (set) or absent.
      await recordAuditEvent(tx, ctx, {
        organizationUid: inserted.organizationUid,
        action: 'email_account.created',
        entityUid: inserted.uid,
        changes: changesBetween(null, {
          email: inserted.email,
          display_name: inserted.displayName,
          smtp_url: inserted.smtpUrl,
        }),
      });
      return inserted;
    });
    return toEmailAccountView(row, options.secrets);
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new AppError('already_exists', `An email account for ${body.email} already exists`, [
        { field: 'email', message: 'already exists in this organization' },
      ]);
    }
    throw error;
  }
}

export async function getEmailAccount(
  db: Db,
  secrets: SecretBox,
  ctx: RequestContext,
  uid: string,
): Promise<EmailAccountView> {
  const row = await repo.findAccount(db, memberOrganizationUids(ctx), uid);
  if (!row) throw notFound('Email account');
  return toEmailAccountView(row, secrets);
}

export async function listEmailAccounts(db: Db, secrets: SecretBox, ctx: RequestContext, page: PageRequest) {
  const { rows, total } = await repo.listAccounts(db, ctx.organizationUid, {
    limit: page.perPage,
    offset: offsetOf(page),
  });
  return { items: rows.map((row) => toEmailAccountView(row, secrets)), total };
}

/**
 * Seals every SMTP URL that is plaintext (written before encryption at rest) or sealed under a key
 * that is no longer the current one. Returns how many were sealed again.
 */
export async function resealSmtpUrls(db: Db, secrets: SecretBox): Promise<number> {
  const rows = await repo.listAccountsWithSmtp(db);
  let count = 0;
  for (const row of rows) {
    const sealed = secrets.resealed(row.smtpUrl, smtpUrlPurpose(row.uid));
    if (sealed === undefined) continue;
    if (await repo.replaceSmtpUrl(db, row.organizationUid, row.uid, row.smtpUrl, sealed)) count += 1;
  }
  return count;
}
