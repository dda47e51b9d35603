/**
 * Which browser origins count as our own. On loopback the same server answers as `localhost`,
 * `127.0.0.1` and `[::1]`, so those names are one origin when scheme and port agree: a person who
 * opens the dashboard at http://localhost:8080 while PUBLIC_URL says http://127.0.0.1:8080 is
 * still on our own page.
 */

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** The comparable form of an origin (loopback names folded together), or undefined when it is not one. */
function originKey(origin: string): string | undefined {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return undefined; // "null", or not a URL at all
  }
  const port = url.port || DEFAULT_PORTS[url.protocol];
  if (port === undefined) return undefined;
  const host = LOOPBACK_HOSTS.has(url.hostname) ? 'loopback' : url.hostname;
  return `${url.protocol}//${host}:${port}`;
}

export interface OriginPolicy {
  /** Whether a request's `Origin` header names one of our own origins. */
  allows(origin: string): boolean;
}

/** createOriginPolicy allows the public URL's origin and `extra` origins, each with its loopback aliases. */
export function createOriginPolicy(publicUrl: string, extra: readonly string[] = []): OriginPolicy {
  const keys = new Set(
    [new URL(publicUrl).origin, ...extra].map(originKey).filter((k): k is string => k !== undefined),
  );
  return {
    allows: (origin) => {
      const key = originKey(origin);
      return key !== undefined && keys.has(key);
    },
  };
}
