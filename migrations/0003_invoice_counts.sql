CREATE TABLE "invoice_counts" (
	"organization_uid" uuid NOT NULL,
	"invoice_type" text NOT NULL,
	"status" text NOT NULL,
	"n" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "invoice_counts_organization_uid_invoice_type_status_pk" PRIMARY KEY("organization_uid","invoice_type","status")
);
--> statement-breakpoint
CREATE FUNCTION invoice_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE invoice_counts SET n = n - 1
     WHERE organization_uid = OLD.organization_uid AND invoice_type = OLD.invoice_type AND status = OLD.status;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO invoice_counts (organization_uid, invoice_type, status, n)
    VALUES (NEW.organization_uid, NEW.invoice_type, NEW.status, 1)
    ON CONFLICT (organization_uid, invoice_type, status) DO UPDATE SET n = invoice_counts.n + 1;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER invoices_count_insert_delete AFTER INSERT OR DELETE ON invoices
  FOR EACH ROW EXECUTE FUNCTION invoice_counts_track();
--> statement-breakpoint
CREATE TRIGGER invoices_count_update AFTER UPDATE ON invoices
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.invoice_type IS DISTINCT FROM NEW.invoice_type
                     OR OLD.organization_uid IS DISTINCT FROM NEW.organization_uid)
  EXECUTE FUNCTION invoice_counts_track();
