-- The trigger that ends a revoked connection's OAuth grant (0004) names its tables without a
-- schema, so a revocation written by a session whose search_path is not this schema (an
-- operator's SQL, a tool) failed on "relation oauth_payloads does not exist" instead of ending the
-- grant. Like the trigger of 0006, its function now runs with this schema as its search_path.
ALTER FUNCTION end_oauth_grant() SET search_path FROM CURRENT;
