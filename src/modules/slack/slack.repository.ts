import { lt } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { slackRequestReplays } from './slack.tables.ts';

/** Records a request by its signature's hash; false when it was recorded before (a replay). */
export async function recordRequest(db: DbOrTx, signatureHash: string): Promise<boolean> {
  const rows = await db
    .insert(slackRequestReplays)
    .values({ signatureHash })
    .onConflictDoNothing()
    .returning({ hash: slackRequestReplays.signatureHash });
  return rows.length === 1;
}

/** Forgets requests older than `before` (past the signature window, a replay is refused by its age). */
export async function pruneRequests(db: DbOrTx, before: Date): Promise<number> {
  const rows = await db
    .delete(slackRequestReplays)
    .where(lt(slackRequestReplays.receivedAt, before))
    .returning({ hash: slackRequestReplays.signatureHash });
  return rows.length;
}
