ALTER TABLE "users" ADD COLUMN "auth_version" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE FUNCTION memberships_bump_auth_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE users SET auth_version = auth_version + 1 WHERE uid = OLD.user_uid;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    UPDATE users SET auth_version = auth_version + 1 WHERE uid = NEW.user_uid;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER memberships_auth_version AFTER INSERT OR UPDATE OR DELETE ON memberships
  FOR EACH ROW EXECUTE FUNCTION memberships_bump_auth_version();
--> statement-breakpoint
CREATE FUNCTION organizations_bump_auth_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE users SET auth_version = auth_version + 1
   WHERE uid IN (SELECT user_uid FROM memberships WHERE organization_uid = NEW.uid);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER organizations_auth_version AFTER UPDATE OF name ON organizations
  FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION organizations_bump_auth_version();
