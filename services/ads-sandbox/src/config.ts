import { ConfigError, int, readConfig, str } from '@adsmcp/runtime/config';

export type Config = ReturnType<typeof loadConfig>;

/** The shortest operator token accepted, so a placeholder such as "admin" cannot guard the sandbox. */
const MIN_ADMIN_TOKEN_LENGTH = 16;

const adminToken = {
  read(env: Record<string, string | undefined>, name: string): string {
    const value = str().read(env, name);
    if (value.length < MIN_ADMIN_TOKEN_LENGTH) {
      throw new ConfigError(`${name} must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters`);
    }
    return value;
  },
};

/** loadConfig reads the sandbox's environment once; it throws naming anything missing. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  return readConfig(
    {
      DATABASE_URL: str(),
      PORT: int(0, 0, 65535),
      HOST: str('127.0.0.1'),
      /** Bearer token for the operator endpoints under /_sandbox. */
      SANDBOX_ADMIN_TOKEN: adminToken,
      /** Each account's sustained request rate on the platform endpoints (burst: twice it). */
      SANDBOX_RATE_PER_SECOND: int(50, 1, 1_000_000),
      /** Days an account's API credential is valid after it is issued, as `GET /me` reports it. */
      SANDBOX_CREDENTIAL_VALID_DAYS: int(60, 1, 3650),
    },
    env,
  );
}
