import type { Db } from './platform/db/client.ts';
import type { SecretBox } from './platform/secrets/secret-box.ts';
import { resealBillingSecrets } from './modules/billing/billing.service.ts';
import { resealSmtpUrls } from './modules/email/email-accounts.service.ts';
import { resealTotpSecrets } from './modules/people/sign-in.service.ts';
import { resealWebhookSecrets } from './modules/webhooks/webhooks.service.ts';

/**
 * Every stored credential, sealed under the current key: plaintext written before encryption at rest,
 * and values sealed under an earlier key. Run at every start (cheap when nothing is stale) and by
 * `remit secrets rotate`. A value no configured key opens stops it with a SecretKeyError naming the key.
 * New kinds of stored secret add their reseal function here.
 */
export async function resealStoredSecrets(
  db: Db,
  secrets: SecretBox,
): Promise<{ billing_secrets: number; smtp_urls: number; totp_secrets: number; webhook_secrets: number }> {
  return {
    billing_secrets: await resealBillingSecrets(db, secrets),
    smtp_urls: await resealSmtpUrls(db, secrets),
    totp_secrets: await resealTotpSecrets(db, secrets),
    webhook_secrets: await resealWebhookSecrets(db, secrets),
  };
}
