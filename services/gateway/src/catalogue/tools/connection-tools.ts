/** Tools about the connection itself: who is calling, which ad accounts it reaches, revoking it. */
import { AccountsService } from '@adsmcp/proto/changes/v1/accounts_pb';
import { ControlsService, type Freeze } from '@adsmcp/proto/changes/v1/controls_pb';
import { type GatewayDeps, onBehalfOf } from '../../deps.ts';
import { credentialRevokedAt, insertAudit, revokeCredential } from '../../store/identity-store.ts';
import { canWrite, defineTool, type ToolRow } from '../catalogue.ts';
import { inputFromRequest } from '../input-schema.ts';
import { type JsonSchema, object } from '../schema.ts';

const noArguments = object({});

const text: JsonSchema = { type: 'string' };
const flag: JsonSchema = { type: 'boolean' };
/** An object whose every listed property is present, and no other. */
const exactly = (properties: Record<string, JsonSchema>): JsonSchema => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});
const nullableText: JsonSchema = { type: ['string', 'null'] };

/** A freeze a person set on writes: to the whole workspace, or to one ad account. */
const freezeSchema = exactly({
  scope: { type: 'string', enum: ['workspace', 'account'] },
  account_id: nullableText,
  reason: text,
  frozen_by: text,
  frozen_at: text,
});

function freezeView(f: Freeze) {
  return {
    scope: f.accountId === '' ? 'workspace' : 'account',
    account_id: f.accountId === '' ? null : f.accountId,
    reason: f.reason,
    frozen_by: f.frozenBy,
    frozen_at: f.frozenAt,
  };
}

/** The freezes in force in the caller's workspace (the changes service keeps them). */
async function freezesOf(ctx: {
  caller: { principal: Parameters<typeof onBehalfOf>[0] };
  deps: GatewayDeps;
}) {
  const { freezes } = await ctx.deps
    .clientOf(ControlsService)
    .listFreezes({}, onBehalfOf(ctx.caller.principal));
  return freezes;
}

export const getConnectionContext = defineTool<GatewayDeps, typeof noArguments>({
  name: 'ads_get_connection_context',
  title: 'Get connection context',
  group: 'Accounts and reporting',
  behavior: 'read',
  features: [],
  description:
    'Returns the workspace this connection acts in, its effective access (role and scopes, and what they allow), ' +
    'the features enabled for the workspace and when the credential expires, and the freezes in force (writes to the ' +
    'whole workspace or to an ad account stopped by a person: who, when and why; nothing can be prepared or applied ' +
    'for a frozen account until a person unfreezes it). Never returns a secret.',
  input: noArguments,
  example: {},
  output: exactly({
    workspace: exactly({ workspace_id: text, name: text, features: { type: 'array', items: text } }),
    user: exactly({ user_id: text, email: text, role: text }),
    credential: exactly({
      credential_id: text,
      name: text,
      kind: text,
      created_at: text,
      expires_at: nullableText,
    }),
    access: exactly({
      role: text,
      scopes: { type: 'array', items: text },
      can_read: flag,
      can_prepare_changes: flag,
      changes_need_human_approval: flag,
    }),
    freezes: { type: 'array', items: freezeSchema },
  }),
  route: {
    kind: 'run',
    why: 'the answer is the authenticated caller itself, which only the gateway holds',
    routesTo: 'gateway',
    async run({ caller, deps }) {
      const { principal } = caller;
      const freezes = await freezesOf({ caller, deps });
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
        freezes: freezes.map(freezeView),
      };
    },
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
    'clients of the workspace keep their access. Every later request with this credential is refused (HTTP 401). ' +
    'Any credential may revoke itself, read-only ones included.',
  input: noArguments,
  example: {},
  output: exactly({
    revoked: flag,
    credential_id: text,
    revoked_at: text,
    advertising_paused: flag,
    other_clients_affected: flag,
  }),
  destructive: true,
  access: 'any-credential',
  route: {
    kind: 'run',
    why: 'credentials belong to the gateway, which revokes them in its own database',
    routesTo: 'gateway',
    async run({ caller, deps }) {
      const { principal } = caller;
      const revokedNow = await revokeCredential(deps.pool, principal.credentialId, principal.workspaceId);
      deps.forgetCredential?.(principal.credentialId);
      // Called twice at once, the second call finds it revoked: it answers with the time stored
      // and writes no second audit event.
      if (revokedNow !== undefined) {
        await insertAudit(deps.pool, {
          workspaceId: principal.workspaceId,
          actor: `credential:${principal.credentialId}`,
          action: 'credential.revoked',
          target: principal.credentialId,
          detail: { by: 'ads_disconnect_client' },
        });
      }
      const revokedAt =
        revokedNow ?? (await credentialRevokedAt(deps.pool, principal.credentialId)) ?? new Date();
      return {
        revoked: true,
        credential_id: principal.credentialId,
        revoked_at: revokedAt.toISOString(),
        advertising_paused: false,
        other_clients_affected: false,
      };
    },
  },
});

export const listAccounts: ToolRow<GatewayDeps> = {
  name: 'ads_list_accounts',
  title: 'List ad accounts',
  group: 'Accounts and reporting',
  behavior: 'read',
  features: [],
  description:
    'Lists the ad-account connections of the workspace, each with its freeze (null, or who stopped writes to it or ' +
    'to the whole workspace, when and why: nothing can be prepared or applied for a frozen account, and can_write is ' +
    'false): the account_id to pass to other tools, name, currency, ' +
    'time zone, whether this credential may prepare changes for it, and the health of the platform credential ' +
    'behind the connection: credential_expires_at as the platform reported it when the account was connected (null ' +
    'when it did not say) and credential_status ok, expiring_soon (within 14 days), expired or unknown. Never ' +
    'returns credentials.',
  input: inputFromRequest(AccountsService.method.listAccounts.input),
  example: {},
  output: exactly({
    accounts: {
      type: 'array',
      items: exactly({
        account_id: text,
        name: text,
        currency: text,
        time_zone: text,
        can_write: flag,
        connection_can_write: flag,
        freeze: { anyOf: [freezeSchema, { type: 'null' }] },
        credential_expires_at: nullableText,
        credential_status: { type: 'string', enum: ['ok', 'expiring_soon', 'expired', 'unknown'] },
      }),
    },
  }),
  // The changes service reads the accounts through the upstream-proxy as the caller and joins the
  // freezes it keeps: one answer, so no account is listed writable while a freeze holds it.
  route: { kind: 'rpc', method: AccountsService.method.listAccounts },
};
