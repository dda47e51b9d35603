/**
 * The tool catalogue: the one definition of the MCP surface. `tools/list` and
 * `GET /catalogue.json` are both derived from it, once, at start-up.
 */

import { AccessLevel } from '@adsmcp/proto/adsmcp/v1/access_pb';
import { accessNeeds } from '@adsmcp/runtime/access-policy';
import type { Principal, Role, Scope } from '@adsmcp/runtime/principal';
import {
  type DescField,
  type DescMessage,
  type DescMethodUnary,
  type MessageShape,
  ScalarType,
} from '@bufbuild/protobuf';
import { PREPARE_TOOL_META } from '../mcp/app-view-meta.ts';
import { messageSchema, publishedOutput } from './output-schema.ts';
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
  /** The tool groups the credential was issued with (mcp/tool-groups.ts ids); absent for every group. */
  toolGroups?: readonly string[];
}

/** One MCP progress notification's content: `progress` grows with each one. */
export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/** What a tool's handler is given besides its validated arguments. */
export interface ToolContext<D> {
  caller: Caller;
  deps: D;
  /**
   * Sends an MCP progress notification for this call; present only when the client asked for
   * progress (a `progressToken`). It never throws: a client that went away misses the update.
   */
  progress?: (update: ProgressUpdate) => Promise<void>;
}

/**
 * Where a call goes. A tool is a row: its route is data, and one interpreter (route-runner.ts) runs
 * every kind. Path templates (`/ad_groups/{ad_group_id}`) bind required string arguments, checked
 * when the catalogue is built.
 */
export type Route<D> = RpcRoute<D> | UpstreamReadRoute | PrepareRoute | RunRoute<D>;

/** A domain service's RPC: arguments map onto its request and its response is the result. */
export interface RpcRoute<D> {
  kind: 'rpc';
  method: DescMethodUnary;
  /** An argument naming an ad account that must be one of the workspace's before the call. */
  account?: string;
  /** Request fields the tool sets itself, whatever the arguments (e.g. how long to wait). */
  fixed?: Record<string, unknown>;
  /**
   * The call's deadline, for a service that may rightly take longer than an internal call's
   * default (a report of hundreds of platform reads); absent for the default.
   */
  timeoutMs?: number;
  /**
   * The result, when it is not the response message as it is (then the row declares `output`).
   * It may throw a ToolFailure for a response that is an error to the agent. With `poll`, it is
   * given the answer as the last re-read left it.
   */
  view?(response: MessageShape<DescMessage>, ctx: ToolContext<D>): Record<string, unknown>;
  /** Work the service finishes after it answered (on its bus), waited for a bounded time. */
  poll?: RpcPoll;
}

/**
 * Waiting for work an RPC started: after the RPC answers, its `field` is read again with `method`
 * until its `status` is one of `final` or `withinMs` has passed, and the answer is the first one
 * with that field as the last read gave it (still queued or running when the time ran out). Each
 * status is an MCP progress notification when the client gave a progress token: the first answer's,
 * then each read whose status differs from the one before. Field names are the protos' (snake_case),
 * checked against the descriptors when the catalogue is built.
 */
export interface RpcPoll {
  /** The RPC that reads the work again; its answer has `field` too, of the same message type. */
  method: DescMethodUnary;
  /** Each field of the re-read's request, and the field of `field`'s message whose value it takes. */
  request: Readonly<Record<string, string>>;
  /** The answer's message field holding the work. */
  field: string;
  /** The string field of `field`'s message saying where the work is, and its values that are final. */
  status: string;
  final: readonly string[];
  /** The longest time re-read, in milliseconds, counted from the first answer. */
  withinMs: number;
  /** The progress notification of the work as one read found it. */
  progress(work: MessageShape<DescMessage>): ProgressUpdate;
}

/**
 * A read of the ad platform through the upstream-proxy: GET `path`, other arguments the query; or,
 * for a read the platform takes as a POST with a body (a report), POST `path` with the `body`
 * argument as the JSON body.
 */
export interface UpstreamReadRoute {
  kind: 'upstream-read';
  /** GET unless said; POST only for the platform's read-only POSTs (the upstream-proxy knows them). */
  method?: 'GET' | 'POST';
  path: string;
  /** The argument whose value is the JSON body of a POST read; required with `method: 'POST'`. */
  body?: string;
  /**
   * `get`: the platform's object is the result's `result` field; `list`: its page is (and
   * `paging`); `report`: its `data` rows are, beside the answer's other fields as they are
   * (paging, currency, time zone, totals).
   */
  shape: 'get' | 'list' | 'report';
  result: string;
  /** What a 404 means, to the agent; `{argument}` is replaced by the argument's value. */
  notFound: string;
}

/**
 * A change to the ad platform, planned and recorded by the changes service: it reads the live
 * `target`, checks the object the operation would produce, and records the exact operation for a
 * person to approve. The result is the change.
 */
export interface PrepareRoute {
  kind: 'prepare';
  /** The kind of platform object (ad, ad_group, ...): the changes service's rules for it apply. */
  object: string;
  /** What the operation does to it: update, archive, pause, activate, create, ... */
  effect: string;
  operation: { method: 'POST'; path: string };
  /** The object the change is about, re-read at prepare, approval and apply; absent for a create. */
  target?: string;
  /** The argument whose value is the operation's JSON body; absent for a body of `{}`. */
  body?: string;
}

/** The escape hatch: code of its own, for what no route kind expresses. `why` says what. */
export interface RunRoute<D> {
  kind: 'run';
  why: string;
  /** Where it goes, for the catalogue: `gateway`, or the RPC it calls. */
  routesTo: string;
  run(ctx: ToolContext<D>, args: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export interface ToolRow<D> {
  name: string;
  title: string;
  group: Group;
  behavior: Behavior;
  /** Workspace features that must be on (e.g. `optimizer`). */
  features: readonly string[];
  description: string;
  input: Schema;
  /**
   * Valid example arguments: the reference shows them, and the round-trip test proves they reach
   * the service or the platform unchanged.
   */
  example: Record<string, unknown>;
  /** The result's shape; derived from the response message for an `rpc` route, declared otherwise. */
  output?: JsonSchema;
  route: Route<D>;
  /** MCP annotations beyond what the behaviour and route imply. */
  destructive?: boolean;
  /** The tool reaches the ad platform; implied by the upstream-read and prepare routes. */
  openWorld?: boolean;
  idempotent?: boolean;
  /**
   * `any-credential`: every valid credential may call it, whatever its scopes and role (revoking
   * one's own credential). Otherwise the behaviour decides (requiredAccess).
   */
  access?: 'any-credential';
}

/** A tool as the catalogue holds it: the row, its published result shape, and where it goes. */
export interface ToolDefinition<D> extends ToolRow<D> {
  output: JsonSchema;
  openWorld: boolean;
  routesTo: string;
}

/** defineTool types `run` of a hand-written route by the tool's input schema. */
export function defineTool<D, S extends Schema>(
  row: Omit<ToolRow<D>, 'input' | 'route'> & {
    input: S;
    route:
      | Exclude<Route<D>, RunRoute<D>>
      | (Omit<RunRoute<D>, 'run'> & {
          run(ctx: ToolContext<D>, args: Infer<S>): Promise<Record<string, unknown>>;
        });
  },
): ToolRow<D> {
  return row as unknown as ToolRow<D>;
}

/** What a credential needs to call a tool of a given behaviour. */
export function requiredAccess(behavior: Behavior): { scope: Scope; roles: readonly Role[] } {
  return behavior === 'read' ? READ_ACCESS : WRITE_ACCESS;
}

/** The read and write accesses of the services' one policy, as a tool's behaviour needs them. */
function toolAccess(level: AccessLevel.READ | AccessLevel.WRITE): { scope: Scope; roles: readonly Role[] } {
  const { scope, roles } = accessNeeds(level);
  if (scope === undefined) throw new Error(`access level ${level} names no scope`);
  return { scope, roles };
}
const READ_ACCESS = toolAccess(AccessLevel.READ);
const WRITE_ACCESS = toolAccess(AccessLevel.WRITE);

/** Whether `principal` may call write and prepare tools. */
export function canWrite(principal: Principal): boolean {
  const need = requiredAccess('write');
  return principal.scopes.includes(need.scope) && need.roles.includes(principal.role);
}

/** The reason a principal may not call `tool`, or undefined when it may. */
export function accessDenied(
  principal: Principal,
  tool: Pick<ToolRow<unknown>, 'behavior' | 'name' | 'access'>,
): string | undefined {
  if (tool.access === 'any-credential') return undefined;
  const need = requiredAccess(tool.behavior);
  if (!principal.scopes.includes(need.scope)) {
    return `this credential lacks the "${need.scope}" scope that ${tool.name} needs; create a credential with scope ${need.scope}`;
  }
  if (!need.roles.includes(principal.role)) {
    return `the role "${principal.role}" may not call ${tool.name}; it needs one of: ${need.roles.join(', ')}`;
  }
  return undefined;
}

export interface McpToolListing {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
  outputSchema: JsonSchema & { type: 'object' };
  annotations: {
    title: string;
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
  _meta?: { ui: { resourceUri: string } };
}

/** Runs a tool's route: the one interpreter of every route kind (route-runner.ts). */
export type RouteRunner<D> = (
  tool: ToolDefinition<D>,
  ctx: ToolContext<D>,
  args: Record<string, unknown>,
) => Promise<Record<string, unknown>>;

export interface Catalogue<D> {
  byName: ReadonlyMap<string, ToolDefinition<D>>;
  run: RouteRunner<D>;
  /** The `tools/list` result. */
  listing: readonly McpToolListing[];
  /** The downloadable catalogue document. */
  document: Record<string, unknown>;
}

/** `package.Service/Method`, from the generated descriptor. */
export function rpcName(method: DescMethodUnary): string {
  return `${method.parent.typeName}/${method.name}`;
}

/** The names of the `{parameters}` of a path template. */
export function pathParameters(template: string): string[] {
  return [...template.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1] as string);
}

/** Every path parameter must be a required string argument: checked once, at start-up. */
function checkPathTemplates(row: ToolRow<unknown>): void {
  const r = row.route;
  const templates =
    r.kind === 'upstream-read' ? [r.path] : r.kind === 'prepare' ? [r.operation.path, r.target ?? ''] : [];
  const json = row.input.json as { properties?: Record<string, JsonSchema>; required?: string[] };
  for (const template of templates) {
    for (const p of pathParameters(template)) {
      if (!json.required?.includes(p) || json.properties?.[p]?.type !== 'string') {
        throw new Error(
          `tool ${row.name}: path parameter {${p}} of ${template} is not a required string argument`,
        );
      }
    }
  }
  if ((r.kind === 'upstream-read' || r.kind === 'prepare') && !json.required?.includes('account_id')) {
    throw new Error(`tool ${row.name}: a route to the ad platform needs a required account_id`);
  }
  const body = r.kind === 'prepare' || r.kind === 'upstream-read' ? r.body : undefined;
  if (body !== undefined && json.properties?.[body]?.type !== 'object') {
    throw new Error(`tool ${row.name}: its body argument ${body} is not an object`);
  }
  if (r.kind === 'upstream-read' && (r.method === 'POST') !== (r.body !== undefined)) {
    throw new Error(`tool ${row.name}: an upstream read has a body argument exactly when it is a POST`);
  }
}

/** The field of `desc` named `name` (its proto name), or a start-up error naming the tool. */
function fieldOf(tool: string, desc: DescMessage, name: string): DescField {
  const found = desc.fields.find((f) => f.name === name);
  if (found === undefined)
    throw new Error(`tool ${tool}: its poll names ${name}, which ${desc.typeName} lacks`);
  return found;
}

/** A poll's fields must exist and fit: checked once, at start-up, so a typo never fails a call. */
function checkPoll(tool: string, method: DescMethodUnary, poll: RpcPoll): void {
  const work = fieldOf(tool, method.output, poll.field);
  const reread = fieldOf(tool, poll.method.output, poll.field);
  if (work.fieldKind !== 'message' || reread.fieldKind !== 'message' || work.message !== reread.message) {
    throw new Error(
      `tool ${tool}: its poll field ${poll.field} must be the same message in ${method.output.typeName} and ${poll.method.output.typeName}`,
    );
  }
  const status = fieldOf(tool, work.message, poll.status);
  if (status.fieldKind !== 'scalar' || status.scalar !== ScalarType.STRING) {
    throw new Error(`tool ${tool}: its poll status ${poll.status} must be a string field`);
  }
  for (const [to, from] of Object.entries(poll.request)) {
    const target = fieldOf(tool, poll.method.input, to);
    const source = fieldOf(tool, work.message, from);
    if (target.fieldKind !== 'scalar' || source.fieldKind !== 'scalar' || target.scalar !== source.scalar) {
      throw new Error(`tool ${tool}: its poll request field ${to} must be a scalar of the type of ${from}`);
    }
  }
  if (poll.final.length === 0) throw new Error(`tool ${tool}: its poll names no final status`);
  if (!(Number.isSafeInteger(poll.withinMs) && poll.withinMs > 0)) {
    throw new Error(`tool ${tool}: its poll withinMs must be a positive whole number of milliseconds`);
  }
}

/** A row resolved: its published result shape, where it goes and whether it reaches the platform. */
function resolve<D>(row: ToolRow<D>, shapes: RouteShapes): ToolDefinition<D> {
  checkPathTemplates(row as ToolRow<unknown>);
  const r = row.route;
  if (r.kind === 'rpc' && r.view !== undefined && row.output === undefined) {
    throw new Error(`tool ${row.name}: a route with a view must declare its output`);
  }
  if (
    r.kind === 'rpc' &&
    r.timeoutMs !== undefined &&
    !(Number.isSafeInteger(r.timeoutMs) && r.timeoutMs > 0)
  ) {
    throw new Error(`tool ${row.name}: its timeoutMs must be a positive whole number of milliseconds`);
  }
  if (r.kind === 'rpc' && r.poll !== undefined) checkPoll(row.name, r.method, r.poll);
  const output =
    row.output ??
    (r.kind === 'rpc' ? messageSchema(r.method.output) : r.kind === 'prepare' ? shapes.change : undefined) ??
    (r.kind === 'upstream-read' ? shapes.upstream(r) : undefined);
  if (output === undefined) throw new Error(`tool ${row.name}: a hand-written route must declare its output`);
  const routesTo =
    r.kind === 'rpc'
      ? r.poll === undefined
        ? rpcName(r.method)
        : `${rpcName(r.method)}, then ${rpcName(r.poll.method)} until final`
      : r.kind === 'upstream-read'
        ? `${shapes.callRpc} ${r.method ?? 'GET'} ${r.path}`
        : r.kind === 'prepare'
          ? `${shapes.prepareRpc} ${r.operation.method} ${r.operation.path}`
          : r.routesTo;
  const openWorld = row.openWorld ?? (r.kind === 'upstream-read' || r.kind === 'prepare');
  return { ...row, output, routesTo, openWorld };
}

/** What buildCatalogue needs to know of the routes it cannot derive from the row alone. */
export interface RouteShapes {
  /** The result of a prepare tool: the change. */
  change: JsonSchema;
  /** The result of an upstream read. */
  upstream(route: UpstreamReadRoute): JsonSchema;
  /** The upstream-proxy's call RPC and the changes service's prepare RPC, by name. */
  callRpc: string;
  prepareRpc: string;
}

/** buildCatalogue derives every published form of the tools once. */
export function buildCatalogue<D>(
  rows: readonly ToolRow<D>[],
  shapes: RouteShapes,
  run: RouteRunner<D>,
): Catalogue<D> {
  const byName = new Map<string, ToolDefinition<D>>();
  for (const row of rows) {
    if (byName.has(row.name)) throw new Error(`tool ${row.name} is defined twice`);
    if (row.input.json.type !== 'object')
      throw new Error(`tool ${row.name}: its input must be an object schema`);
    byName.set(row.name, resolve(row, shapes));
  }
  const tools = [...byName.values()];
  const listing = tools.map(
    (t): McpToolListing => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.input.json as JsonSchema & { type: 'object' },
      outputSchema: publishedOutput(t.output),
      annotations: {
        title: t.title,
        readOnlyHint: t.behavior === 'read',
        destructiveHint: t.behavior !== 'read' && t.destructive === true,
        idempotentHint: t.idempotent ?? t.behavior === 'read',
        openWorldHint: t.openWorld,
      },
      // An MCP Apps host shows a prepared change in its review view (mcp/app-views.ts).
      ...(t.behavior === 'prepare' ? { _meta: PREPARE_TOOL_META } : {}),
    }),
  );
  const document = {
    server: { name: SERVER_NAME, version: SERVER_VERSION },
    documentation_version: DOCUMENTATION_VERSION,
    tools: tools.map((t, i) => ({
      ...listing[i],
      group: t.group,
      behavior: behaviorName(t.behavior),
      required_features: [...t.features],
      required_scope: t.access === 'any-credential' ? 'any' : requiredAccess(t.behavior).scope,
      routes_to: t.routesTo,
    })),
  };
  return { byName, run, listing, document };
}

/** The behaviour as the spec names it. */
export function behaviorName(b: Behavior): string {
  return b === 'read' ? 'Read' : b === 'write' ? 'Write' : 'Prepare change';
}
