import { ConfigError, readConfig, serviceConfig, str } from '@adsmcp/runtime/config';
import { CREDENTIAL_KEY_BYTES } from './domain/credential-cipher.ts';

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

/** loadConfig reads the upstream-proxy's environment once; it throws naming anything missing. */
export function loadConfig(env: Env = process.env) {
  return readConfig(
    {
      ...serviceConfig,
      /** Base URL of the ad platform's API (in development and tests, the ads sandbox). */
      UPSTREAM_URL: httpUrl,
      /** AES-256-GCM key that seals the platform credentials at rest. */
      UPSTREAM_CREDENTIAL_KEY: credentialKey,
    },
    env,
  );
}
