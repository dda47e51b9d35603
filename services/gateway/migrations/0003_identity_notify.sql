-- Every change to who may do what (a credential revoked or expired, a user's role, a workspace's
-- features) is announced on the channel gateway_identity with the workspace's id, whichever
-- process made it (the dashboard, the admin command, another replica), so that each gateway drops
-- what it remembers of that workspace's credentials at once.

CREATE FUNCTION notify_member_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gateway_identity', NEW.workspace_id::text);
  RETURN NULL;
END
$$;

CREATE FUNCTION notify_workspace_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gateway_identity', NEW.id::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER credentials_identity_change AFTER UPDATE ON credentials
  FOR EACH ROW EXECUTE FUNCTION notify_member_change();
CREATE TRIGGER users_identity_change AFTER UPDATE ON users
  FOR EACH ROW EXECUTE FUNCTION notify_member_change();
CREATE TRIGGER workspaces_identity_change AFTER UPDATE ON workspaces
  FOR EACH ROW EXECUTE FUNCTION notify_workspace_change();
