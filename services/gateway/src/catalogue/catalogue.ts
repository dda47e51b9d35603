/**
 * The tool catalogue: the one definition of the MCP surface. `tools/list` and
 * `GET /catalogue.json` are both derived from it, once, at start-up.
 */

import type { Principal, Role, Scope } from '@adsmcp/runtime/principal';
import type { DescMessage } from '@bufbuild/protobuf';
import type { Infer, JsonSchema, Schema } from './schema.ts';

export const SERVER_NAME = 'adsmcp';
export const SERVER_VERSION = '1.0.0';
export const DOCUMENTATION_VERSION = 'v1.0';

export type Behavior = 'read' | 'write' | 'prepare';

export type Group =
  | 'Accounts and reporting'
  | 'Campaign creation'
  | 'Marketing'
  | 'Automation and optimization'
  | 'Campaign support'
  | 'Conversions and audiences';

/** The caller of a tool, as the gateway authenticated it. */
export interface Caller {
  principal: Principal;
  credentialName: string;
  credentialKind: 'token' | 'oauth';
  credentialCreatedAt: Date;
  credentialExpiresAt: Date | null;
  userEmail: string;
  workspaceName: string;
  features: string[];
}

/** What a tool's handler is given besides its validated arguments. */
export interface ToolContext<D> {
  caller: Caller;
  deps: D;
}

export interface ToolDefinition<D, S extends Schema = Schema> {
  name: string;
  title: string;
  group: Group;
  behavior: Behavior;
  /** Workspace features that must be on (e.g. `optimizer`). */
  features: readonly string[];
  description: string;
  input: S;
  /** The tool reaches the ad platform (MCP `openWorldHint`). */
  openWorld: boolean;
  /** The tool can destroy or revoke something (MCP `destructiveHint`). */
  destructive: boolean;
  /** Where the call goes: `gateway` for local tools, else the RPC (`package.Service/Method`). */
  routesTo: string;
  /**
   * For a tool whose arguments map onto its RPC request mechanically: the request message, and
   * example arguments that the round-trip test sends through the mapping.
   */
  rpc?: { request: DescMessage; example: Record<string, unknown> };
  run(ctx: ToolContext<D>, args: Infer<S>): Promise<Record<string, unknown>>;
}

/** defineTool keeps the argument type of `run` tied to the tool's input schema. */
export function defineTool<D, S extends Schema>(def: ToolDefinition<D, S>): ToolDefinition<D> {
  return def as unknown as ToolDefinition<D>;
}

/** What a credential needs to call a tool of a given behaviour. */
export function requiredAccess(behavior: Behavior): { scope: Scope; roles: readonly Role[] } {
  return behavior === 'read'
    ? { scope: 'read', roles: ['admin', 'editor', 'viewer'] }
    : { scope: 'write', roles: ['admin', 'editor'] };
}

/** Whether `principal` may call write and prepare tools. */
export function canWrite(principal: Principal): boolean {
  const need = requiredAccess('write');
  return principal.scopes.includes(need.scope) && need.roles.includes(principal.role);
}

/** The reason a principal may not call a tool, or undefined when it may. */
export function accessDenied(principal: Principal, behavior: Behavior, tool: string): string | undefined {
  const need = requiredAccess(behavior);
  if (!principal.scopes.includes(need.scope)) {
    return `this credential lacks the "${need.scope}" scope that ${tool} needs; create a credential with scope ${need.scope}`;
  }
  if (!need.roles.includes(principal.role)) {
    return `the role "${principal.role}" may not call ${tool}; it needs one of: ${need.roles.join(', ')}`;
  }
  return undefined;
}

export interface McpToolListing {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
  annotations: {
    title: string;
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
}

export interface Catalogue<D> {
  byName: ReadonlyMap<string, ToolDefinition<D>>;
  /** The `tools/list` result. */
  listing: readonly McpToolListing[];
  /** The downloadable catalogue document. */
  document: Record<string, unknown>;
}

/** buildCatalogue derives every published form of the tools once. */
export function buildCatalogue<D>(tools: readonly ToolDefinition<D>[]): Catalogue<D> {
  const byName = new Map<string, ToolDefinition<D>>();
  for (const t of tools) {
    if (byName.has(t.name)) throw new Error(`tool ${t.name} is defined twice`);
    if (t.input.json.type !== 'object') throw new Error(`tool ${t.name}: its input must be an object schema`);
    byName.set(t.name, t);
  }
  const listing = tools.map(
    (t): McpToolListing => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.input.json as JsonSchema & { type: 'object' },
      annotations: {
        title: t.title,
        readOnlyHint: t.behavior === 'read',
        destructiveHint: t.behavior !== 'read' && t.destructive,
        idempotentHint: t.behavior === 'read',
        openWorldHint: t.openWorld,
      },
    }),
  );
  const document = {
    server: { name: SERVER_NAME, version: SERVER_VERSION },
    documentation_version: DOCUMENTATION_VERSION,
    tools: tools.map((t, i) => ({
      ...listing[i],
      group: t.group,
      behavior: t.behavior === 'read' ? 'Read' : t.behavior === 'write' ? 'Write' : 'Prepare change',
      required_features: [...t.features],
      required_scope: requiredAccess(t.behavior).scope,
      routes_to: t.routesTo,
    })),
  };
  return { byName, listing, document };
}
