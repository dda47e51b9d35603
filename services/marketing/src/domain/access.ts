/** Who may read and who may change a workspace's marketing records. */
import { PermissionDeniedError } from '@adsmcp/runtime/errors';
import type { Principal, Role } from '@adsmcp/runtime/principal';

const WRITER_ROLES: readonly Role[] = ['admin', 'editor'];

const describe = (p: Principal) => `role ${p.role} and scopes [${p.scopes.join(', ')}]`;

/** requireReader allows reads to any member of the workspace holding the read scope. */
export function requireReader(principal: Principal): void {
  if (!principal.scopes.includes('read')) {
    throw new PermissionDeniedError(
      `reading marketing items needs the read scope; this caller has ${describe(principal)}`,
    );
  }
}

/** requireWriter allows saves and archives to admins and editors holding the write scope. */
export function requireWriter(principal: Principal): void {
  if (!principal.scopes.includes('write') || !WRITER_ROLES.includes(principal.role)) {
    throw new PermissionDeniedError(
      `saving or archiving marketing items needs the write scope and the admin or editor role; this caller has ${describe(principal)}`,
    );
  }
}
