/** Who may do what with a workspace's connections. */
import { PermissionDeniedError } from '@adsmcp/runtime/errors';
import type { Principal } from '@adsmcp/runtime/principal';

const describe = (p: Principal) => `role ${p.role} and scopes [${p.scopes.join(', ')}]`;

/** requireConnectionAdmin allows creating connections only to a workspace admin holding the write scope. */
export function requireConnectionAdmin(principal: Principal): void {
  if (principal.role !== 'admin' || !principal.scopes.includes('write')) {
    throw new PermissionDeniedError(
      `connecting an ad account needs the admin role and the write scope; this caller has ${describe(principal)}`,
    );
  }
}

/** requireReader allows listing connections to any member of the workspace holding the read scope. */
export function requireReader(principal: Principal): void {
  if (!principal.scopes.includes('read')) {
    throw new PermissionDeniedError(
      `listing accounts needs the read scope; this caller has ${describe(principal)}`,
    );
  }
}
