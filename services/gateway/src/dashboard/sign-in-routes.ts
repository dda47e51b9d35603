/** Signing in to the dashboard with email and password, and signing out. */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { RateLimiter } from '../auth/rate-limiter.ts';
import type { GatewayDeps } from '../deps.ts';
import { hashPassword, hashToken, verifyPassword } from '../domain/credentials.ts';
import { findUserByEmail, insertAudit } from '../store/identity-store.ts';
import { deleteSession, insertSession } from '../store/session-store.ts';
import { type DashboardContext, readCookie, SESSION_COOKIE } from './dashboard-context.ts';
import type { DashboardOptions } from './dashboard-routes.ts';
import { esc, page } from './html.ts';
import { dashboardNext } from './sign-in-next.ts';

const COOKIE = SESSION_COOKIE;
const SESSION_HOURS = 12;

/** Where sign-in may continue besides the overview: the dashboard page that asked for it, or an OAuth consent page (nothing off-site). */
function afterSignIn(next: unknown): string | undefined {
  return dashboardNext(next);
}

const loginPage = (message?: string, email = '', next?: string) =>
  page(
    'Sign in',
    `<section class="login"><h2>Sign in</h2>${message ? `<p class="error" role="alert">${esc(message)}</p>` : ''}
      <form method="post" action="/dashboard/login">${next ? `<input type="hidden" name="next" value="${esc(next)}">` : ''}
        <label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${esc(email)}">
        <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
        <p><button type="submit">Sign in</button></p>
      </form></section>`,
  );

export function registerSignInRoutes(
  app: FastifyInstance,
  deps: GatewayDeps,
  opts: DashboardOptions,
  ctx: DashboardContext,
): void {
  registerLogin(app, deps, opts, ctx);
  registerLogout(app, deps, opts, ctx);
}

function registerLogin(
  app: FastifyInstance,
  deps: GatewayDeps,
  opts: DashboardOptions,
  { foreignOrigin, refuseForm }: DashboardContext,
): void {
  const secure = opts.publicUrl.startsWith('https://');
  // Five failed sign-ins a minute per email and address. Each attempt is charged before its
  // password is hashed (that work is what a guesser would make us do) and given back when it
  // succeeds, so a person who signs in often is never locked out by their own sessions.
  const attempts = new RateLimiter(5 / 60, 5);
  // An unknown email is checked against this hash, so that answering takes as long as for a
  // member (the time must not tell which emails have an account).
  const noSuchUserHash = hashPassword(randomBytes(24).toString('base64url'));
  noSuchUserHash.catch(() => undefined);

  app.get<{ Querystring: { next?: string } }>('/dashboard/login', async (req, reply) =>
    reply.type('text/html').send(loginPage(undefined, '', afterSignIn(req.query.next))),
  );

  app.post('/dashboard/login', async (req, reply) => {
    // Like every other form: signing in from another site's page would sign a person in unawares.
    const badOrigin = foreignOrigin(req);
    if (badOrigin !== undefined) return refuseForm(reply, badOrigin);
    const body = (req.body ?? {}) as Record<string, string>;
    const email = String(body.email ?? '')
      .trim()
      .toLowerCase();
    const password = String(body.password ?? '');
    const attemptKey = `${email}|${req.ip}`;
    const limit = attempts.take(attemptKey);
    if (!limit.allowed) {
      reply.header('retry-after', String(limit.retryAfterSeconds));
      return reply
        .code(429)
        .type('text/html')
        .send(
          loginPage(
            `Too many attempts. Try again in ${limit.retryAfterSeconds} seconds.`,
            email,
            afterSignIn(body.next),
          ),
        );
    }
    const user = email ? await findUserByEmail(deps.pool, email) : undefined;
    const passwordRight = await verifyPassword(password, user?.password_hash ?? (await noSuchUserHash));
    if (!user || !passwordRight) {
      return reply
        .code(401)
        .type('text/html')
        .send(loginPage('The email or password is not right.', email, afterSignIn(body.next)));
    }
    attempts.give(attemptKey);
    const token = randomBytes(32).toString('base64url');
    await insertSession(deps.pool, {
      tokenHash: hashToken(token),
      userId: user.id,
      csrfToken: randomBytes(24).toString('base64url'),
      expiresAt: new Date(Date.now() + SESSION_HOURS * 3_600_000),
    });
    await insertAudit(deps.pool, {
      workspaceId: user.workspace_id,
      actor: `user:${user.id}`,
      action: 'user.signed_in',
    });
    // A browser another person left signed in: OAuth clients that person approved no longer get
    // codes in their name from it (they ask the person now here).
    await opts.endOAuthSignIn?.(req, reply, user.id);
    reply.header(
      'set-cookie',
      `${COOKIE}=${token}; Path=/dashboard; HttpOnly; SameSite=Lax; Max-Age=${SESSION_HOURS * 3600}${secure ? '; Secure' : ''}`,
    );
    return reply.redirect(afterSignIn(body.next) ?? '/dashboard', 303);
  });
}

function registerLogout(
  app: FastifyInstance,
  deps: GatewayDeps,
  opts: DashboardOptions,
  { checkedPost }: DashboardContext,
): void {
  app.post('/dashboard/logout', async (req, reply) => {
    const s = await checkedPost(req, reply);
    if (!s) return reply;
    const token = readCookie(req, COOKIE);
    if (token) await deleteSession(deps.pool, hashToken(token));
    // Signed out means signed out for OAuth clients too: the next authorization request from
    // this browser asks who is there again, even from a client the person approved before.
    await opts.endOAuthSignIn?.(req, reply);
    reply.header('set-cookie', `${COOKIE}=; Path=/dashboard; HttpOnly; SameSite=Lax; Max-Age=0`);
    return reply.redirect('/dashboard/login', 303);
  });
}
