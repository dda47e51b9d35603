/**
 * Reads a service's configuration from the environment once, at start-up, and fails fast
 * with one message naming every missing or malformed variable.
 */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

interface Field<T> {
  read(env: Env, name: string): T;
}

/** A required string; `fallback` makes it optional. */
export function str(fallback?: string): Field<string> {
  return {
    read(env, name) {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      throw new ConfigError(`${name} is required`);
    },
  };
}

/** An optional string: undefined when unset. */
export function optional(): Field<string | undefined> {
  return { read: (env, name) => (env[name] === '' ? undefined : env[name]) };
}

/** An integer within [min, max]; `fallback` makes it optional. */
export function int(fallback: number | undefined, min: number, max: number): Field<number> {
  return {
    read(env, name) {
      const raw = env[name];
      if (raw === undefined || raw === '') {
        if (fallback !== undefined) return fallback;
        throw new ConfigError(`${name} is required`);
      }
      const n = Number(raw);
      if (!Number.isInteger(n) || n < min || n > max) {
        throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      }
      return n;
    },
  };
}

type Spec = Record<string, Field<unknown>>;
type Out<S extends Spec> = { [K in keyof S]: S[K] extends Field<infer T> ? T : never };

/**
 * Reads every variable in `spec` from `env`. Collects all problems before throwing, so an
 * operator fixes a deployment in one pass.
 */
export function readConfig<S extends Spec>(spec: S, env: Env = process.env): Out<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, field] of Object.entries(spec)) {
    try {
      out[name] = field.read(env, name);
    } catch (err) {
      if (err instanceof ConfigError) problems.push(err.message);
      else throw err;
    }
  }
  if (problems.length > 0) throw new ConfigError(`configuration: ${problems.join('; ')}`);
  return out as Out<S>;
}

/** The variables every Connect service reads. */
export const serviceConfig = {
  DATABASE_URL: str(),
  /** The gateway's Ed25519 public key (SPKI PEM) that principal tokens are verified with. */
  PRINCIPAL_PUBLIC_KEY: str(),
  PORT: int(0, 0, 65535),
  HOST: str('127.0.0.1'),
};
