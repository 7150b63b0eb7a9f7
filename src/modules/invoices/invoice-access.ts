import { and, eq, exists, inArray, or, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/client.ts';
import { roleIn, type Principal, type RequestContext } from '../../platform/http/context.ts';
import { AppError } from '../../platform/http/errors.ts';
import { invoiceAssignees, invoices } from './invoices.tables.ts';

/**
 * Who may see an invoice — the one rule every path goes through (lists, GET, PUT, line items, comments,
 * attachments, payments, email prepare, search, the work-task context search; docs/authentication.md):
 * in each organization, admins see every invoice; members see only the invoices assigned to them
 * (listed in `assignee_user_uids`, or `responsible`), receivable or payable — the rule of the AP list
 * (interface 4.7), which the AR list already followed. An invoice the caller may not see
 * answers 404 exactly like another organization's. The role that counts is the caller's role in the
 * invoice's organization.
 */
export interface InvoiceReader {
  /** Organizations where the caller is an admin: every invoice. */
  adminOrganizationUids: string[];
  /** Organizations where the caller is a member: the invoices assigned to them. */
  memberOrganizationUids: string[];
  userUid: string;
  userId: number;
}

export function invoiceReader(principal: Principal): InvoiceReader {
  return {
    adminOrganizationUids: principal.memberships
      .filter((m) => m.role === 'admin')
      .map((m) => m.organizationUid),
    memberOrganizationUids: principal.memberships
      .filter((m) => m.role !== 'admin')
      .map((m) => m.organizationUid),
    userUid: principal.user.uid,
    userId: principal.user.id,
  };
}

/** An invoice assigned to the user: listed as an assignee, or the responsible user. */
function assignedTo(db: DbOrTx, userUid: string, userId: number): SQL {
  return or(
    eq(invoices.responsible, userId),
    exists(
      db
        .select({ one: sql`1` })
        .from(invoiceAssignees)
        .where(
          and(
            eq(invoiceAssignees.organizationUid, invoices.organizationUid),
            eq(invoiceAssignees.invoiceUid, invoices.uid),
            eq(invoiceAssignees.userUid, userUid),
          ),
        ),
    ),
  )!;
}

/** The rule as a condition on `invoices`, across every organization of the caller. */
export function visibleInvoices(db: DbOrTx, reader: InvoiceReader): SQL {
  const conditions: SQL[] = [];
  if (reader.adminOrganizationUids.length > 0) {
    conditions.push(inArray(invoices.organizationUid, reader.adminOrganizationUids));
  }
  if (reader.memberOrganizationUids.length > 0) {
    conditions.push(
      and(
        inArray(invoices.organizationUid, reader.memberOrganizationUids),
        assignedTo(db, reader.userUid, reader.userId),
      )!,
    );
  }
  return conditions.length > 0 ? or(...conditions)! : sql`false`;
}

/**
 * The rule inside one organization (lists, search): nothing to add for an admin; for a member, the
 * invoices assigned to them.
 */
export function visibleInOrganization(db: DbOrTx, ctx: RequestContext): SQL | undefined {
  if (ctx.role === 'admin') return undefined;
  return assignedTo(db, ctx.principal.user.uid, ctx.principal.user.id);
}

/** The rule for one row already read with its assignees (the one-statement GET). */
export function mayRead(
  reader: InvoiceReader,
  invoice: { organizationUid: string; responsible: number | null },
  assigneeUids: string[],
): boolean {
  if (reader.adminOrganizationUids.includes(invoice.organizationUid)) return true;
  if (!reader.memberOrganizationUids.includes(invoice.organizationUid)) return false;
  return invoice.responsible === reader.userId || assigneeUids.includes(reader.userUid);
}

/**
 * Approving a payable (status → approved): an admin of its organization or its responsible user; a
 * member who is only assigned may not. With segregation of duties on, whoever entered the payable may
 * not approve it, admins included (a standard AP control).
 */
export function assertMayApprove(
  ctx: RequestContext,
  invoice: { organizationUid: string; responsible: number | null; createdByUserUid: string },
  segregationOfDuties: boolean,
): void {
  const role = roleIn(ctx, invoice.organizationUid);
  const user = ctx.principal.user;
  if (role !== 'admin' && invoice.responsible !== user.id) {
    throw new AppError(
      'forbidden',
      "Only an admin or the invoice's responsible user may approve a payable; being assigned to it is not enough",
    );
  }
  if (segregationOfDuties && invoice.createdByUserUid === user.uid) {
    throw new AppError(
      'forbidden',
      'Segregation of duties is on for this organization: the user who entered a payable cannot also approve it',
    );
  }
}
