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
-- One set of triggers per table the view reads.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['invoices', 'invoice_line_items', 'invoice_comments', 'invoice_assignees',
                           'invoice_integrations', 'parties', 'party_contacts'] LOOP
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS changed
                    FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change()', t || '_view_insert', t);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS changed
                    FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change()', t || '_view_update', t);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS changed
                    FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change()', t || '_view_delete', t);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I
                    FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all()', t || '_view_truncate', t);
  END LOOP;
END
$$;
--> statement-breakpoint
CREATE TRIGGER users_invoice_view_change
  AFTER UPDATE OF email, full_name, avatar_url OR DELETE OR TRUNCATE
  ON users FOR EACH STATEMENT EXECUTE FUNCTION remit_notify_invoice_change_all();
