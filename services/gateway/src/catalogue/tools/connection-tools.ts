/** Tools about the connection itself: who is calling, which ad accounts it reaches, revoking it. */
import { type GatewayDeps, onBehalfOf } from '../../deps.ts';
import { insertAudit, revokeCredential } from '../../store/identity-store.ts';
import { canWrite, defineTool } from '../catalogue.ts';
import { object } from '../schema.ts';

const noArguments = object({});

export const getConnectionContext = defineTool<GatewayDeps, typeof noArguments>({
  name: 'ads_get_connection_context',
  title: 'Get connection context',
  group: 'Accounts and reporting',
  behavior: 'read',
  features: [],
  description:
    'Returns the workspace this connection acts in, its effective access (role and scopes, and what they allow), ' +
    'the features enabled for the workspace and when the credential expires. Never returns a secret.',
  input: noArguments,
  openWorld: false,
  destructive: false,
  routesTo: 'gateway',
  async run({ caller }) {
    const { principal } = caller;
    return {
      workspace: {
        workspace_id: principal.workspaceId,
        name: caller.workspaceName,
        features: caller.features,
      },
      user: { user_id: principal.userId, email: caller.userEmail, role: principal.role },
      credential: {
        credential_id: principal.credentialId,
        name: caller.credentialName,
        kind: caller.credentialKind,
        created_at: caller.credentialCreatedAt.toISOString(),
        expires_at: caller.credentialExpiresAt?.toISOString() ?? null,
      },
      access: {
        role: principal.role,
        scopes: principal.scopes,
        can_read: principal.scopes.includes('read'),
        can_prepare_changes: canWrite(principal),
        // Applying a prepared change always needs a person's approval in the dashboard.
        changes_need_human_approval: true,
      },
    };
  },
});

export const disconnectClient = defineTool<GatewayDeps, typeof noArguments>({
  name: 'ads_disconnect_client',
  title: 'Disconnect this client',
  group: 'Accounts and reporting',
  behavior: 'write',
  features: [],
  description:
    'Revokes the credential this request was made with, and only that one. Advertising is not paused and other ' +
    'clients of the workspace keep their access. Every later request with this credential is refused (HTTP 401).',
  input: noArguments,
  openWorld: false,
  destructive: true,
  routesTo: 'gateway',
  async run({ caller, deps }) {
    const { principal } = caller;
    const revokedAt = await revokeCredential(deps.pool, principal.credentialId, principal.workspaceId);
    deps.forgetCredential?.(principal.credentialId);
    await insertAudit(deps.pool, {
      workspaceId: principal.workspaceId,
      actor: `credential:${principal.credentialId}`,
      action: 'credential.revoked',
      target: principal.credentialId,
      detail: { by: 'ads_disconnect_client' },
    });
    return {
      revoked: true,
      credential_id: principal.credentialId,
      revoked_at: (revokedAt ?? new Date()).toISOString(),
      advertising_paused: false,
      other_clients_affected: false,
    };
  },
});

export const listAccounts = defineTool<GatewayDeps, typeof noArguments>({
  name: 'ads_list_accounts',
  title: 'List ad accounts',
  group: 'Accounts and reporting',
  behavior: 'read',
  features: [],
  description:
    'Lists the ad-account connections of the workspace: the account_id to pass to other tools, name, currency, ' +
    'time zone and whether this credential may prepare changes for it. Never returns credentials.',
  input: noArguments,
  openWorld: false,
  destructive: false,
  routesTo: 'upstream.v1.UpstreamService/ListAccounts',
  async run({ caller, deps }) {
    const { principal } = caller;
    const res = await deps.upstream.listAccounts({}, onBehalfOf(principal));
    const credentialCanWrite = canWrite(principal);
    return {
      accounts: res.accounts.map((a) => ({
        account_id: a.accountId,
        name: a.name,
        currency: a.currency,
        time_zone: a.timeZone,
        // The connection allows writes and so does this credential.
        can_write: a.canWrite && credentialCanWrite,
        connection_can_write: a.canWrite,
      })),
    };
  },
});
