import { ConfigError, int, optional, readConfig, serviceConfig, str } from '@adsmcp/runtime/config';
import { trustedKeys } from '@adsmcp/runtime/trust';
import { CREDENTIAL_KEY_BYTES } from './domain/credential-cipher.ts';
import { SERVICE_NAME } from './server.ts';
import { DEFAULT_TIMEOUT_MS } from './upstream/platform-client.ts';
import { DEFAULT_BURST, DEFAULT_RATE_PER_SECOND } from './upstream/request-budget.ts';

export type Config = ReturnType<typeof loadConfig>;

type Env = Record<string, string | undefined>;

/** Standard base64 of exactly 32 bytes (`openssl rand -base64 32`). */
const BASE64_32_BYTES = /^[A-Za-z0-9+/]{43}=$/;

const credentialKey = {
  read(env: Env, name: string): Buffer {
    const raw = str().read(env, name).trim();
    const key = Buffer.from(raw, 'base64');
    if (!BASE64_32_BYTES.test(raw) || key.length !== CREDENTIAL_KEY_BYTES) {
      throw new ConfigError(
        `${name} must be ${CREDENTIAL_KEY_BYTES} bytes, base64-encoded (generate one with: openssl rand -base64 32)`,
      );
    }
    return key;
  },
};

const httpUrl = {
  read(env: Env, name: string): string {
    const raw = str().read(env, name);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ConfigError(`${name} must be an absolute http or https URL (got "${raw}")`);
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '') {
      throw new ConfigError(`${name} must be an http or https URL without query or fragment (got "${raw}")`);
    }
    return url.toString();
  },
};

/** A positive number (fractions allowed), `fallback` when unset. */
function positiveNumber(fallback: number, max: number) {
  return {
    read(env: Env, name: string): number {
      const raw = env[name];
      if (raw === undefined || raw === '') return fallback;
      const n = Number(raw);
      if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(n > 0) || n > max) {
        throw new ConfigError(`${name} must be a number greater than 0 and at most ${max} (got "${raw}")`);
      }
      return n;
    },
  };
}

/** loadConfig reads the upstream-proxy's environment once; it throws naming anything missing. */
export function loadConfig(env: Env = process.env) {
  return readConfig(
    {
      ...serviceConfig,
      /** Base URL of the ad platform's API (in development and tests, the ads sandbox). */
      UPSTREAM_URL: httpUrl,
      /** AES-256-GCM key that seals the platform credentials at rest. */
      UPSTREAM_CREDENTIAL_KEY: credentialKey,
      /** Requests per second each ad account may send to the platform, over all replicas. */
      UPSTREAM_RATE_PER_SECOND: positiveNumber(DEFAULT_RATE_PER_SECOND, 100_000),
      /** How many requests an ad account may send at once after a quiet spell. */
      UPSTREAM_BURST: int(DEFAULT_BURST, 1, 1_000_000),
      /** How long one request to the platform may take, in milliseconds. */
      UPSTREAM_TIMEOUT_MS: int(DEFAULT_TIMEOUT_MS, 100, 300_000),
      /**
       * The changes service's Ed25519 public key (SPKI PEM): when set, its worker's principal
       * tokens (issuer adsmcp-changes, channel worker) are accepted, so it can apply approved changes.
       */
      CHANGES_PUBLIC_KEY: optional(),
      /**
       * The optimizer's Ed25519 public key (SPKI PEM): when set, its worker's read-only principal
       * tokens (issuer adsmcp-optimizer) are accepted, so it can read review runs' snapshots.
       */
      OPTIMIZER_PUBLIC_KEY: optional(),
      /**
       * The marketing service's Ed25519 public key (SPKI PEM): when set, its read-only principal
       * tokens (issuer adsmcp-marketing) are accepted for GetAccount and Call, so it can read
       * what a performance report compares.
       */
      MARKETING_PUBLIC_KEY: optional(),
    },
    env,
  );
}

/**
 * trustedIssuers maps each issuer whose principal tokens this service accepts to its public key,
 * as the trust table (@adsmcp/runtime/trust) says.
 */
export function trustedIssuers(
  config: Pick<
    Config,
    'PRINCIPAL_PUBLIC_KEY' | 'CHANGES_PUBLIC_KEY' | 'OPTIMIZER_PUBLIC_KEY' | 'MARKETING_PUBLIC_KEY'
  >,
): Record<string, string> {
  return trustedKeys(SERVICE_NAME, config);
}
