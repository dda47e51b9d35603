-- The tool groups a credential was issued with (ids of services/gateway/src/mcp/tool-groups.ts):
-- its connections are served those groups' tools, and a connection's MCP URL may narrow within
-- them but never widen past them. NULL is every group, as for every credential issued before.
-- The ids are checked against the catalogue when the credential is issued; the database keeps
-- them as given, since the groups are the catalogue's and not the schema's.
ALTER TABLE credentials
  ADD COLUMN tool_groups text[] CHECK (tool_groups IS NULL OR cardinality(tool_groups) > 0);
