-- Invoice view cache (issue 17; docs/performance.md#invoice-view-cache). A server keeps the view
-- `GET /api/invoices/{uid}` read for a few seconds and forgets an organization's views when anything
-- such a view reads changes there: these triggers NOTIFY `remit_invoices` with the organization's uid,
-- at commit, to every listening session of every process (the committing session included, before its
-- COMMIT returns; PostgreSQL sends one notification per distinct payload in a transaction).
-- Statement-level with transition tables, so a bulk write costs one trigger call; PostgreSQL allows a
-- transition table only on a trigger of one event, hence three per table.
CREATE FUNCTION remit_notify_invoice_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('remit_invoices', c.organization_uid::text)
     FROM (SELECT DISTINCT organization_uid FROM changed) c;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- A truncate, or a change to a user (a comment's author: name, email, avatar) may reach any organization.
CREATE FUNCTION remit_notify_invoice_change_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('remit_invoices', '*');
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER invoices_view_insert AFTER INSERT ON invoices
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoices_view_update AFTER UPDATE ON invoices
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoices_view_delete AFTER DELETE ON invoices
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoices_view_truncate AFTER TRUNCATE ON invoices
  FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
--> statement-breakpoint
CREATE TRIGGER invoice_line_items_view_insert AFTER INSERT ON invoice_line_items
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_line_items_view_update AFTER UPDATE ON invoice_line_items
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_line_items_view_delete AFTER DELETE ON invoice_line_items
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_line_items_view_truncate AFTER TRUNCATE ON invoice_line_items
  FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
--> statement-breakpoint
CREATE TRIGGER invoice_comments_view_insert AFTER INSERT ON invoice_comments
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_comments_view_update AFTER UPDATE ON invoice_comments
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_comments_view_delete AFTER DELETE ON invoice_comments
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_comments_view_truncate AFTER TRUNCATE ON invoice_comments
  FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
--> statement-breakpoint
CREATE TRIGGER invoice_assignees_view_insert AFTER INSERT ON invoice_assignees
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_assignees_view_update AFTER UPDATE ON invoice_assignees
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_assignees_view_delete AFTER DELETE ON invoice_assignees
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_assignees_view_truncate AFTER TRUNCATE ON invoice_assignees
  FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
--> statement-breakpoint
CREATE TRIGGER invoice_integrations_view_insert AFTER INSERT ON invoice_integrations
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_integrations_view_update AFTER UPDATE ON invoice_integrations
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_integrations_view_delete AFTER DELETE ON invoice_integrations
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER invoice_integrations_view_truncate AFTER TRUNCATE ON invoice_integrations
  FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
--> statement-breakpoint
CREATE TRIGGER parties_view_insert AFTER INSERT ON parties
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER parties_view_update AFTER UPDATE ON parties
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER parties_view_delete AFTER DELETE ON parties
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER parties_view_truncate AFTER TRUNCATE ON parties
  FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
--> statement-breakpoint
CREATE TRIGGER party_contacts_view_insert AFTER INSERT ON party_contacts
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER party_contacts_view_update AFTER UPDATE ON party_contacts
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER party_contacts_view_delete AFTER DELETE ON party_contacts
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change();
--> statement-breakpoint
CREATE TRIGGER party_contacts_view_truncate AFTER TRUNCATE ON party_contacts
  FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
--> statement-breakpoint
CREATE TRIGGER users_invoice_view_change
  AFTER UPDATE OF email, full_name, avatar_url OR DELETE OR TRUNCATE
  ON users FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
