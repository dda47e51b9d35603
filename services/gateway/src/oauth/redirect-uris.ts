/** Which redirect URIs a client may register: https anywhere, plain http only back to this machine. */

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
export const MAX_REDIRECT_URIS = 10;

/** Why `uri` may not be a redirect URI, or undefined when it may. */
export function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `redirect_uris: "${uri}" is not an absolute URL`;
  }
  if (url.hash !== '') return `redirect_uris: "${uri}" must not have a fragment`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return `redirect_uris: "${uri}" must use https, or http to a loopback address (localhost, 127.0.0.1, [::1])`;
}

/** The first problem with a client's redirect URIs, or undefined when all are acceptable. */
export function redirectUrisProblem(uris: unknown): string | undefined {
  if (!Array.isArray(uris)) return undefined; // the library requires and checks the list itself
  if (uris.length > MAX_REDIRECT_URIS) return `redirect_uris: at most ${MAX_REDIRECT_URIS} are accepted`;
  for (const uri of uris) {
    const problem =
      typeof uri === 'string' ? redirectUriProblem(uri) : 'redirect_uris: each must be a string';
    if (problem !== undefined) return problem;
  }
  return undefined;
}
