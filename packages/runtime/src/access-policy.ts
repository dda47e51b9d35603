/**
 * The one access policy of every service. Each method declares in its proto which access it needs
 * (`option (adsmcp.v1.access)`, proto/adsmcp/v1/access.proto); this table says what each access
 * asks of the verified principal, and the server (connect-server.ts) applies it to every call
 * before the handler runs, on both paths a call can take. Checks that depend on the request or on
 * stored data (an account's connection, a change's status, who created a record) stay with the
 * handler; a method whose whole rule is such a check declares ACCESS_LEVEL_CALLER.
 */
import { AccessLevel, access as accessOption } from '@adsmcp/proto/adsmcp/v1/access_pb';
import { type DescMethod, type DescService, getOption, hasOption } from '@bufbuild/protobuf';
import { PermissionDeniedError } from './errors.ts';
import { type Channel, type Principal, ROLES, type Role, type Scope } from './principal.ts';

/** What one access asks of a principal, and how a refusal says it. */
interface Rule {
  scope?: Scope;
  roles?: readonly Role[];
  channels?: readonly Channel[];
  /** Completes "<doing> …; this caller has …". */
  need: string;
  /** Whether the refusal names the caller's channel (when the rule is about the channel). */
  showChannel: boolean;
}

const POLICY: Readonly<Record<Exclude<AccessLevel, AccessLevel.UNSPECIFIED>, Rule>> = {
  [AccessLevel.READ]: { scope: 'read', need: 'needs the read scope', showChannel: false },
  [AccessLevel.WRITE]: {
    scope: 'write',
    roles: ['admin', 'editor'],
    need: 'needs the write scope and the admin or editor role',
    showChannel: false,
  },
  [AccessLevel.ADMIN]: {
    scope: 'write',
    roles: ['admin'],
    need: 'needs the admin role and the write scope',
    showChannel: false,
  },
  [AccessLevel.ADMIN_IN_PERSON]: {
    scope: 'write',
    roles: ['admin'],
    channels: ['dashboard', 'operator'],
    need: "needs a workspace admin signed in to the dashboard (or the operator's admin command)",
    showChannel: true,
  },
  [AccessLevel.OPERATOR]: {
    scope: 'write',
    roles: ['admin'],
    channels: ['operator'],
    need: "is for the platform's operator (npm run admin)",
    showChannel: true,
  },
  [AccessLevel.OPERATOR_WRITE]: {
    scope: 'write',
    channels: ['operator'],
    need: 'needs the write scope from an operator',
    showChannel: true,
  },
  [AccessLevel.WORKER]: {
    channels: ['worker'],
    need: "is only for a service's own worker",
    showChannel: true,
  },
  [AccessLevel.CALLER]: { need: '', showChannel: false },
};

/**
 * What an access asks of a credential's scope and role (any role when the rule names none), for
 * what describes or lists calls by their access without making one: the gateway's tool listing
 * and reference, and a preflight that says whether its caller could prepare what it plans.
 */
export function accessNeeds(level: Exclude<AccessLevel, AccessLevel.UNSPECIFIED>): {
  scope: Scope | undefined;
  roles: readonly Role[];
} {
  const rule = POLICY[level];
  return { scope: rule.scope, roles: rule.roles ?? ROLES };
}

/** A method's declared access: its level and the words a refusal names it by. */
export interface MethodAccess {
  level: Exclude<AccessLevel, AccessLevel.UNSPECIFIED>;
  doing: string;
}

/** The access `method` declares, or a reason it declares none usable. */
function declared(method: DescMethod): MethodAccess | string {
  if (!hasOption(method, accessOption)) return 'declares no (adsmcp.v1.access) option';
  const { level, doing } = getOption(method, accessOption);
  if (level === AccessLevel.UNSPECIFIED || POLICY[level] === undefined)
    return `declares access level ${level}, which the policy has no rule for`;
  if (doing.trim() === '') return 'declares no `doing` for its refusals';
  return { level, doing };
}

/**
 * accessTable reads every method's access of `service`, refusing the whole service when one
 * declares none: a service that cannot start is better than a method open to every caller.
 */
export function accessTable(service: DescService): Map<string, MethodAccess> {
  const table = new Map<string, MethodAccess>();
  const missing: string[] = [];
  for (const method of service.methods) {
    const found = declared(method);
    if (typeof found === 'string') missing.push(`${service.typeName}/${method.name} ${found}`);
    else table.set(method.name, found);
  }
  if (missing.length > 0)
    throw new Error(
      `every method must declare its access in the proto (option (adsmcp.v1.access), proto/adsmcp/v1/access.proto): ${missing.join('; ')}`,
    );
  return table;
}

const describe = (p: Principal, showChannel: boolean) =>
  `role ${p.role} and scopes [${p.scopes.join(', ')}]${showChannel ? ` via ${p.via}` : ''}`;

/** Why `principal` may not make a call of `access`, or undefined when it may. */
export function accessRefusal(access: MethodAccess, principal: Principal): string | undefined {
  const rule = POLICY[access.level];
  const allowed =
    (rule.scope === undefined || principal.scopes.includes(rule.scope)) &&
    (rule.roles === undefined || rule.roles.includes(principal.role)) &&
    (rule.channels === undefined || rule.channels.includes(principal.via));
  if (allowed) return undefined;
  return `${access.doing} ${rule.need}; this caller has ${describe(principal, rule.showChannel)}`;
}

/** checkAccess refuses (PermissionDenied, through the server's error mapping) a call `principal` may not make. */
export function checkAccess(access: MethodAccess, principal: Principal): void {
  const refusal = accessRefusal(access, principal);
  if (refusal !== undefined) throw new PermissionDeniedError(refusal);
}
