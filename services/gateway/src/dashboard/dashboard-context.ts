/**
 * What every dashboard route shares: the signed-in session read from its cookie, and the checks a
 * form post must pass (our own origin, a session, its CSRF token) before it does anything.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createOriginPolicy } from '../auth/origin.ts';
import type { GatewayDeps } from '../deps.ts';
import { hashToken } from '../domain/credentials.ts';
import { findSession, type SessionView } from '../store/session-store.ts';
import { esc, page } from './html.ts';

export const SESSION_COOKIE = 'adsmcp_session';

/**
 * The value of cookie `name`, or undefined when it is absent or not validly percent-encoded (a
 * value we never set: another site on the same host, or a hand-edited cookie, means no session).
 */
export function readCookie(req: FastifyRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== name) continue;
    try {
      return decodeURIComponent(v.join('='));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** The session and form checks, built once per app and handed to each group of routes. */
export interface DashboardContext {
  session(req: FastifyRequest): Promise<SessionView | undefined>;
  /** A POST from a signed-in person on our own page (origin and CSRF checked), or undefined after a 403. */
  checkedPost(req: FastifyRequest, reply: FastifyReply): Promise<SessionView | undefined>;
  user(s: SessionView): { email: string; workspace: string; csrf: string };
  /** Why a form post did not come from one of our own pages (its Origin), or undefined when it did. */
  foreignOrigin(req: FastifyRequest): string | undefined;
  /** Refuses a form post with 403 and a message that says which check it failed. */
  refuseForm(reply: FastifyReply, message: string): FastifyReply;
}

export function createDashboardContext(
  deps: GatewayDeps,
  opts: { publicUrl: string; allowedOrigins?: readonly string[] },
): DashboardContext {
  const origins = createOriginPolicy(opts.publicUrl, opts.allowedOrigins);
  const session = async (req: FastifyRequest): Promise<SessionView | undefined> => {
    const token = readCookie(req, SESSION_COOKIE);
    return token ? findSession(deps.pool, hashToken(token)) : undefined;
  };

  /** Refuses a form post with 403 and a message that says which check it failed. */
  const refuseForm = (reply: FastifyReply, message: string) =>
    reply
      .code(403)
      .type('text/html')
      .send(page('Forbidden', `<p class="error" role="alert">${esc(message)}</p>`));

  /** Why a form post did not come from one of our own pages (its Origin), or undefined when it did. */
  const foreignOrigin = (req: FastifyRequest): string | undefined => {
    const sent = req.headers.origin;
    if (sent === undefined || origins.allows(sent)) return undefined;
    return `This form was refused by the origin check: it was sent from ${sent}, not from this dashboard's own pages (${new URL(opts.publicUrl).origin}). Open the dashboard at its own address and try again.`;
  };

  /** A POST from a signed-in person on our own page, or undefined after answering 403. */
  const checkedPost = async (req: FastifyRequest, reply: FastifyReply): Promise<SessionView | undefined> => {
    const badOrigin = foreignOrigin(req);
    if (badOrigin !== undefined) {
      await refuseForm(reply, badOrigin);
      return undefined;
    }
    const s = await session(req);
    if (!s) {
      await refuseForm(reply, 'You are not signed in, or your session has ended. Sign in again and retry.');
      return undefined;
    }
    const body = (req.body ?? {}) as Record<string, string>;
    if (body.csrf !== s.csrf_token) {
      await refuseForm(
        reply,
        "This form has expired: its CSRF token is not your session's (the CSRF check failed). Reload the page and try again.",
      );
      return undefined;
    }
    return s;
  };

  const user = (s: SessionView) => ({ email: s.email, workspace: s.workspace_name, csrf: s.csrf_token });

  return { session, checkedPost, user, foreignOrigin, refuseForm };
}
