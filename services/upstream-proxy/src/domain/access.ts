/** Who may do what with a workspace's connections. */
import { PermissionDeniedError } from '@adsmcp/runtime/errors';
import type { Principal } from '@adsmcp/runtime/principal';
import type { Connection } from './connection.ts';
import type { PlatformCall } from './platform-call.ts';

const describe = (p: Principal) => `role ${p.role} and scopes [${p.scopes.join(', ')}]`;

/** requireConnectionAdmin allows creating connections only to a workspace admin holding the write scope. */
export function requireConnectionAdmin(principal: Principal): void {
  if (principal.role !== 'admin' || !principal.scopes.includes('write')) {
    throw new PermissionDeniedError(
      `connecting an ad account needs the admin role and the write scope; this caller has ${describe(principal)}`,
    );
  }
}

/** requireReader allows reading connections to any member of the workspace holding the read scope. */
export function requireReader(principal: Principal, doing = 'listing accounts'): void {
  if (!principal.scopes.includes('read')) {
    throw new PermissionDeniedError(`${doing} needs the read scope; this caller has ${describe(principal)}`);
  }
}

/**
 * requirePlatformAccess allows a read from the platform (a GET or a read-only POST) to a holder of
 * the read scope, and a change only to a holder of the write scope, through a connection that
 * allows changes.
 */
export function requirePlatformAccess(
  principal: Principal,
  call: Pick<PlatformCall, 'readOnly'>,
  connection: Connection,
): void {
  if (call.readOnly) {
    requireReader(principal, 'reading from the ad platform');
    return;
  }
  if (!principal.scopes.includes('write')) {
    throw new PermissionDeniedError(
      `changing an ad account (POST) needs the write scope; this caller has ${describe(principal)}`,
    );
  }
  if (!connection.canWrite) {
    throw new PermissionDeniedError(
      `the connection to ad account ${connection.accountId} ("${connection.name}") is read-only: it allows no changes; a workspace admin can connect the account again with write permission`,
    );
  }
}
