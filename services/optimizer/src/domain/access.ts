/** Who may read and who may change a workspace's optimizers. */
import { PermissionDeniedError } from '@adsmcp/runtime/errors';
import type { Principal } from '@adsmcp/runtime/principal';

const describe = (p: Principal) => `role ${p.role} and scopes [${p.scopes.join(', ')}]`;

/** requireReader allows reading optimizers to any member of the workspace holding the read scope. */
export function requireReader(principal: Principal, what: string): void {
  if (!principal.scopes.includes('read')) {
    throw new PermissionDeniedError(`${what} needs the read scope; this caller has ${describe(principal)}`);
  }
}

/** requireWriter allows changing optimizers to an admin or editor holding the write scope. */
export function requireWriter(principal: Principal, what: string): void {
  if (!principal.scopes.includes('write') || (principal.role !== 'admin' && principal.role !== 'editor')) {
    throw new PermissionDeniedError(
      `${what} needs the admin or editor role and the write scope; this caller has ${describe(principal)}`,
    );
  }
}

/**
 * requireOperator allows what only the platform's operator does (switching a workspace's
 * features): an operator's command acting as a workspace admin with the write scope.
 */
export function requireOperator(principal: Principal, what: string): void {
  if (principal.via !== 'operator' || principal.role !== 'admin' || !principal.scopes.includes('write')) {
    throw new PermissionDeniedError(
      `${what} is for the platform's operator (npm run admin); this caller has ${describe(principal)} via ${principal.via}`,
    );
  }
}
