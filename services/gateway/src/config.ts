import { ConfigError, int, optional, readConfig, str } from '@adsmcp/runtime/config';

export type Config = ReturnType<typeof loadConfig>;

/** loadConfig reads the gateway's environment once; it throws naming anything missing. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const c = readConfig(
    {
      DATABASE_URL: str(),
      /** Ed25519 private key (PKCS#8 PEM) that signs principal tokens for the services. */
      PRINCIPAL_PRIVATE_KEY: str(),
      PORT: int(8080, 1, 65535),
      HOST: str('127.0.0.1'),
      /** The URL clients reach the gateway at; defaults to http://HOST:PORT. */
      PUBLIC_URL: optional(),
      UPSTREAM_PROXY_URL: str(),
      CHANGES_URL: str(),
      OPTIMIZER_URL: str(),
      MARKETING_URL: str(),
      /** Extra browser origins allowed to call /mcp, comma-separated (the public origin always is). */
      ALLOWED_ORIGINS: optional(),
      MCP_RATE_PER_SECOND: int(20, 1, 100_000),
      MCP_RATE_BURST: int(40, 1, 1_000_000),
      /**
       * The largest request body. 16 MiB holds every documented maximum: a CSV import of 1,500,000
       * characters (up to 4 bytes each in UTF-8, 6 when JSON escapes a control character) and a
       * workbook's three sheets of 1000 rows with URLs of 2048 characters.
       */
      MAX_BODY_BYTES: int(16 * 1024 * 1024, 1024, 64 * 1024 * 1024),
      /** Failed authentications per client address per minute before it is refused (429). */
      AUTH_FAILURES_PER_MINUTE: int(60, 1, 1_000_000),
      /** How long a credential found valid is trusted from memory before the database is asked again. */
      AUTH_CACHE_SECONDS: int(5, 0, 3600),
      /** Time a client has to send a whole request, headers and body; then it is cut off with 408. */
      REQUEST_TIMEOUT_SECONDS: int(30, 1, 3600),
      /** "true" behind a proxy that sets X-Forwarded-For, so the limit applies per client, not per proxy. */
      TRUST_PROXY: str('false'),
      /**
       * How long the gateway goes on serving after SIGTERM (answers carry Connection: close,
       * /readyz says stopping) before it stops listening, so that connections a balancer opened
       * just before are answered rather than reset. Kubernetes: a few seconds, for the endpoint's
       * removal to reach every node.
       */
      SHUTDOWN_DELAY_MS: int(250, 0, 60_000),
      /** How long a delivery link to a campaign asset's image works. */
      ASSET_LINK_TTL_SECONDS: int(600, 60, 3600),
    },
    env,
  );
  if (c.TRUST_PROXY !== 'true' && c.TRUST_PROXY !== 'false') {
    throw new ConfigError(`configuration: TRUST_PROXY must be true or false (got "${c.TRUST_PROXY}")`);
  }
  return {
    ...c,
    TRUST_PROXY: c.TRUST_PROXY === 'true',
    PUBLIC_URL: (c.PUBLIC_URL ?? `http://${c.HOST}:${c.PORT}`).replace(/\/+$/, ''),
    ALLOWED_ORIGINS: (c.ALLOWED_ORIGINS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  };
}
