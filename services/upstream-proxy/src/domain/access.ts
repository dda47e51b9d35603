/**
 * What a platform call needs beyond its method's declared access (CALLER, proto/upstream/v1):
 * the read or the write scope by the call's own method, and a connection that allows changes.
 */
import { PermissionDeniedError } from '@adsmcp/runtime/errors';
import type { Principal } from '@adsmcp/runtime/principal';
import type { Connection } from './connection.ts';
import type { PlatformCall } from './platform-call.ts';

const describe = (p: Principal) => `role ${p.role} and scopes [${p.scopes.join(', ')}]`;

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
    if (!principal.scopes.includes('read'))
      throw new PermissionDeniedError(
        `reading from the ad platform needs the read scope; this caller has ${describe(principal)}`,
      );
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
