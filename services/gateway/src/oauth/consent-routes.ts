/**
 * The OAuth sign-in and consent pages, part of the dashboard (its session cookie is scoped to
 * /dashboard): a person signs in, sees which client asks, for which workspace, scopes and ad
 * accounts, and approves or declines. Approval records the grant as a credential of kind 'oauth',
 * so the connection is listed, and revocable, with the pasted tokens.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Pool } from '@adsmcp/runtime/db';
import type { Scope } from '@adsmcp/runtime/principal';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { createOriginPolicy } from '../auth/origin.ts';
import { sessionPrincipal } from '../dashboard/change-pages.ts';
import { readCookie, SESSION_COOKIE } from '../dashboard/dashboard-routes.ts';
import { esc, page } from '../dashboard/html.ts';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { hashToken } from '../domain/credentials.ts';
import { insertAudit, insertCredential } from '../store/identity-store.ts';
import { findSession, type SessionView } from '../store/session-store.ts';
import { grantCredentialHash } from './access-tokens.ts';
import {
  type ConsentDecision,
  claimConsentDecision,
  findConsentDecision,
  insertGrantCredential,
  releaseConsentDecision,
  setConsentGrant,
} from './oauth-store.ts';
import { CLIENT_NAME_MAX, GRANT_TTL_SECONDS, OAUTH_SCOPES } from './provider.ts';

export const CONSENT_PATH = '/dashboard/oauth';

const SCOPE_TEXT: Record<Scope, string> = {
  read: 'read: see the workspace’s ad accounts, campaigns, reports and changes',
  write: 'write: prepare changes to campaigns and ads (each still needs approval before it is applied)',
};

/** The scopes a request asks for, among ours; read when it names none of them. */
function requestedScopes(scope: unknown): Scope[] {
  const asked = new Set(typeof scope === 'string' ? scope.split(' ') : []);
  const scopes = OAUTH_SCOPES.filter((s) => asked.has(s));
  return scopes.length > 0 ? scopes : ['read'];
}

/** The scopes a request names that are not ours: none of them is granted. */
function notOffered(scope: unknown): string[] {
  const asked = typeof scope === 'string' ? scope.split(' ') : [];
  return asked.filter((s) => s !== '' && !(OAUTH_SCOPES as readonly string[]).includes(s));
}

/** At most `max` characters of `text` (code points), marked with … when cut: nothing shown is unbounded. */
export function clipped(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** How long a redirect URI the consent page shows may be before it is cut. */
const SHOWN_URI_MAX = 300;

export interface ConsentOptions {
  publicUrl: string;
  allowedOrigins: readonly string[];
  resource: string;
}

/** What the consent routes share: the services, the authorization server, and the origins allowed to post. */
interface ConsentContext {
  deps: GatewayDeps;
  provider: Provider;
  resource: string;
  origins: ReturnType<typeof createOriginPolicy>;
}

export function registerConsentRoutes(
  app: FastifyInstance,
  deps: GatewayDeps,
  provider: Provider,
  o: ConsentOptions,
): void {
  const origins = createOriginPolicy(o.publicUrl, o.allowedOrigins);
  const c: ConsentContext = { deps, provider, resource: o.resource, origins };
  registerConsentPage(app, c);
  registerApprove(app, c);
  registerDecline(app, c);
}

async function session(c: ConsentContext, req: FastifyRequest): Promise<SessionView | undefined> {
  const token = readCookie(req, SESSION_COOKIE);
  return token ? findSession(c.deps.pool, hashToken(token)) : undefined;
}

function problem(reply: FastifyReply, status: number, message: string) {
  return reply
    .code(status)
    .type('text/html')
    .send(page('Sign-in request', `<section><p class="error" role="alert">${esc(message)}</p></section>`));
}

/** The pending authorization request behind `uid`, or undefined when it is gone or not this browser's. */
async function pending(c: ConsentContext, req: FastifyRequest, reply: FastifyReply, uid: string) {
  try {
    const details = await c.provider.interactionDetails(req.raw, reply.raw);
    return details.uid === uid ? details : undefined;
  } catch {
    return undefined;
  }
}
const EXPIRED =
  'This sign-in request has expired or was opened in another browser. Start the connection again from your MCP client.';

function registerConsentPage(app: FastifyInstance, c: ConsentContext): void {
  const { deps, provider } = c;
  app.get<{ Params: { uid: string } }>(`${CONSENT_PATH}/:uid`, async (req, reply) => {
    const details = await pending(c, req, reply, req.params.uid);
    if (details === undefined) return problem(reply, 400, EXPIRED);
    const s = await session(c, req);
    if (!s)
      return reply.redirect(
        `/dashboard/login?next=${encodeURIComponent(`${CONSENT_PATH}/${details.uid}`)}`,
        303,
      );
    const clientId = String(details.params.client_id);
    const client = await provider.Client.find(clientId);
    if (client === undefined) return problem(reply, 400, EXPIRED);
    const redirectUri = String(details.params.redirect_uri ?? client.redirectUris?.[0] ?? '');
    const scopes = requestedScopes(details.params.scope);
    const accounts = await deps.upstream.listAccounts({}, onBehalfOf(sessionPrincipal(s))).then(
      (r) => r.accounts,
      () => undefined,
    );
    const accountList =
      accounts === undefined
        ? '<p class="error">The ad accounts could not be loaded just now.</p>'
        : accounts.length === 0
          ? '<p class="muted">No ad accounts are connected to this workspace.</p>'
          : `<ul class="accounts">${accounts.map((a) => `<li>${esc(a.name)} <code>${esc(a.accountId)}</code>${a.canWrite ? '' : ' (read only)'}</li>`).join('')}</ul>`;
    // Registration bounds client_name; a client stored before that rule is cut here.
    const clientName = clipped(client.clientName ?? clientId, CLIENT_NAME_MAX);
    // The form's redirects end at the client: the page's form-action must allow its origin.
    const clientOrigin = redirectUri ? new URL(redirectUri).origin : '';
    reply.header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self' ${clientOrigin}; frame-ancestors 'none'`,
    );
    const action = `${CONSENT_PATH}/${esc(details.uid)}`;
    const csrf = `<input type="hidden" name="csrf" value="${esc(s.csrf_token)}">`;
    return reply.type('text/html').send(
      page(
        'Connect an MCP client',
        `<section class="consent"><h2>Connect <span id="client-name">${esc(clientName)}</span>?</h2>
        <p>It will act as <strong>${esc(s.email)}</strong> (${esc(s.role)}) in the workspace <strong id="workspace">${esc(s.workspace_name)}</strong>, and return to <code>${esc(clipped(redirectUri, SHOWN_URI_MAX))}</code>.</p>
        <h3>It asks to</h3><ul id="scopes">${scopes.map((sc) => `<li data-scope="${esc(sc)}">${esc(SCOPE_TEXT[sc])}</li>`).join('')}</ul>
        <h3>Ad accounts it will reach</h3>${accountList}
        <form method="post" action="${action}/approve" style="display:inline">${csrf}<button type="submit" id="approve">Approve</button></form>
        <form method="post" action="${action}/decline" style="display:inline">${csrf}<button type="submit" class="danger" id="decline">Decline</button></form>
        </section>`,
        { email: s.email, workspace: s.workspace_name, csrf: s.csrf_token },
      ),
    );
  });
}

/** A consent form post from a signed-in person on our own page, or undefined after answering 403. */
async function checkedPost(c: ConsentContext, req: FastifyRequest, reply: FastifyReply) {
  const { origins } = c;
  const sent = req.headers.origin;
  if (sent !== undefined && !origins.allows(sent)) {
    await problem(
      reply,
      403,
      `This form was refused by the origin check: it was sent from ${sent}, not from this dashboard's own pages.`,
    );
    return undefined;
  }
  const s = await session(c, req);
  if (!s) {
    await problem(reply, 403, 'You are not signed in, or your session has ended. Sign in again and retry.');
    return undefined;
  }
  if ((req.body as Record<string, string> | undefined)?.csrf !== s.csrf_token) {
    await problem(
      reply,
      403,
      'This form has expired: its CSRF token is not your session’s. Reload the page and try again.',
    );
    return undefined;
  }
  return s;
}

/**
 * The answer to a post for a request that was decided already: while the request is pending
 * and the post asks for the same, where the first decision sent the browser (waiting briefly
 * for a concurrent first post to finish); otherwise a refusal that says so.
 */
async function alreadyDecided(
  c: ConsentContext,
  req: FastifyRequest<{ Params: { uid: string } }>,
  reply: FastifyReply,
  asked: ConsentDecision['decision'],
) {
  const { deps } = c;
  const uid = req.params.uid;
  let first = await findConsentDecision(deps.pool, uid);
  for (
    let waited = 0;
    first?.decision === 'approved' && first.grant_id === null && waited < 5000;
    waited += 100
  ) {
    await delay(100);
    first = await findConsentDecision(deps.pool, uid);
  }
  if (first === undefined)
    return problem(
      reply,
      409,
      'This sign-in request could not be decided just now. Reload the page and try again.',
    );
  const details = first.decision === asked ? await pending(c, req, reply, uid) : undefined;
  if (details?.result !== undefined) return reply.redirect(details.returnTo, 303);
  return problem(
    reply,
    409,
    `This sign-in request was already ${first.decision}; a request is decided once. ${first.decision === 'approved' ? 'Return to your MCP client.' : 'Start the connection again from your MCP client.'}`,
  );
}

function registerApprove(app: FastifyInstance, c: ConsentContext): void {
  const { deps, provider, resource } = c;
  app.post<{ Params: { uid: string } }>(`${CONSENT_PATH}/:uid/approve`, async (req, reply) => {
    const s = await checkedPost(c, req, reply);
    if (!s) return reply;
    if (await findConsentDecision(deps.pool, req.params.uid))
      return alreadyDecided(c, req, reply, 'approved');
    const details = await pending(c, req, reply, req.params.uid);
    if (details === undefined) return problem(reply, 400, EXPIRED);
    const clientId = String(details.params.client_id);
    const client = await provider.Client.find(clientId);
    if (client === undefined) return problem(reply, 400, EXPIRED);
    const scopes = requestedScopes(details.params.scope);
    // One grant per request: the first post claims the decision; a repeated or concurrent one
    // finds it and makes nothing.
    if (!(await claimConsentDecision(deps.pool, details.uid, 'approved')))
      return alreadyDecided(c, req, reply, 'approved');
    let to: string;
    try {
      const grant = new provider.Grant({ accountId: s.user_id, clientId });
      grant.addOIDCScope(scopes.join(' '));
      grant.addResourceScope(resource, scopes.join(' '));
      // Whatever else the request named (openid, offline_access, profile) is refused, not left
      // undecided: the provider would otherwise ask for consent again for it, every time.
      const refused = notOffered(details.params.scope);
      if (refused.length > 0) grant.rejectOIDCScope(refused.join(' '));
      const grantId = await grant.save();
      await recordConnection(deps.pool, {
        session: s,
        grantId,
        clientId,
        name: clipped(client.clientName ?? clientId, CLIENT_NAME_MAX),
        scopes,
      });
      to = await provider.interactionResult(
        req.raw,
        reply.raw,
        { login: { accountId: s.user_id }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
      await setConsentGrant(deps.pool, details.uid, grantId);
    } catch (err) {
      await releaseConsentDecision(deps.pool, details.uid).catch(() => undefined);
      throw err;
    }
    return reply.redirect(to, 303);
  });
}

function registerDecline(app: FastifyInstance, c: ConsentContext): void {
  const { deps, provider } = c;
  app.post<{ Params: { uid: string } }>(`${CONSENT_PATH}/:uid/decline`, async (req, reply) => {
    const s = await checkedPost(c, req, reply);
    if (!s) return reply;
    if (await findConsentDecision(deps.pool, req.params.uid))
      return alreadyDecided(c, req, reply, 'declined');
    const details = await pending(c, req, reply, req.params.uid);
    if (details === undefined) return problem(reply, 400, EXPIRED);
    if (!(await claimConsentDecision(deps.pool, details.uid, 'declined')))
      return alreadyDecided(c, req, reply, 'declined');
    const to = await provider.interactionResult(
      req.raw,
      reply.raw,
      { error: 'access_denied', error_description: 'the person declined the connection' },
      { mergeWithLastSubmission: false },
    );
    return reply.redirect(to, 303);
  });
}

/**
 * Records an approved grant as the person's connection (a credential of kind oauth, expiring
 * with the grant), its link to the grant and the audit entry, in one transaction. Nothing else is
 * awaited while its client is held.
 */
async function recordConnection(
  pool: Pool,
  c: { session: SessionView; grantId: string; clientId: string; name: string; scopes: Scope[] },
): Promise<void> {
  const s = c.session;
  const credentialId = randomUUID();
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    await insertCredential(db, {
      id: credentialId,
      workspaceId: s.workspace_id,
      userId: s.user_id,
      name: c.name,
      kind: 'oauth',
      tokenHash: grantCredentialHash(c.grantId),
      scopes: c.scopes,
      expiresAt: new Date(Date.now() + GRANT_TTL_SECONDS * 1000),
    });
    await insertGrantCredential(db, c.grantId, credentialId);
    await insertAudit(db, {
      workspaceId: s.workspace_id,
      actor: `user:${s.user_id}`,
      action: 'credential.created',
      target: credentialId,
      detail: { scopes: c.scopes, user: s.email, oauth_client: c.clientId },
    });
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    db.release();
  }
}
