/**
 * The one interpreter of tool routes (catalogue.ts): a service RPC, a read of the ad platform, a
 * prepared change, or a tool's own code. Every tool's path from `tools/call` to a service or the
 * ad platform is here or in the row's hand-written `run`.
 */
import { ChangesService, type PrepareChangeRequestSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { nameUnreachable } from '@adsmcp/runtime/service-client';
import type { DescMessage, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { CallOptions } from '@connectrpc/connect';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import {
  type PrepareRoute,
  pathParameters,
  type RouteShapes,
  type RpcRoute,
  rpcName,
  type ToolContext,
  type ToolDefinition,
  type UpstreamReadRoute,
} from './catalogue.ts';
import { CHANGE_OUTPUT, changeView } from './change-view.ts';
import { type PlatformRead, readPlatform, segment, workspaceAccount } from './platform.ts';
import { requestFrom, resultOf } from './rpc-mapping.ts';
import type { JsonSchema } from './schema.ts';

type UnaryCall = (request: unknown, options: CallOptions) => Promise<MessageShape<DescMessage>>;

async function runRpc(
  route: RpcRoute<GatewayDeps>,
  ctx: ToolContext<GatewayDeps>,
  args: Record<string, unknown>,
) {
  const { caller, deps } = ctx;
  if (route.account !== undefined) {
    // The service trusts the gateway for the account: it must be one of the workspace's.
    await workspaceAccount(deps, caller.principal, String(args[route.account]));
  }
  const call = (deps.clientOf(route.method.parent) as unknown as Record<string, UnaryCall>)[
    route.method.localName
  ];
  if (call === undefined) throw new Error(`no client method for ${rpcName(route.method)}`);
  const request = requestFrom(route.method.input, { ...args, ...route.fixed });
  const options = onBehalfOf(caller.principal);
  const response = await call(
    request,
    route.timeoutMs === undefined ? options : { ...options, timeoutMs: route.timeoutMs },
  );
  return route.view ? route.view(response, ctx) : resultOf(route.method.output, response);
}

/** The template with each `{parameter}` replaced by its argument as one path segment. */
function bindPath(template: string, args: Record<string, unknown>): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, p: string) => segment(p, String(args[p])));
}

/**
 * The read an upstream-read route makes for `args`: the path parameters fill the template, the
 * account is the account, the body argument (of a POST read) is the JSON body, every other
 * argument is the query (an array as repeated parameters).
 */
export function upstreamReadRequest(route: UpstreamReadRoute, args: Record<string, unknown>): PlatformRead {
  const bound = new Set(['account_id', ...pathParameters(route.path)]);
  if (route.body !== undefined) bound.add(route.body);
  const query: PlatformRead['query'] = {};
  for (const [k, v] of Object.entries(args)) {
    if (bound.has(k) || v === undefined) continue;
    query[k] = Array.isArray(v) ? v.map(String) : typeof v === 'number' ? v : String(v);
  }
  return {
    accountId: String(args.account_id),
    method: route.method ?? 'GET',
    path: bindPath(route.path, args),
    query,
    ...(route.body === undefined ? {} : { body: JSON.stringify(args[route.body] ?? {}) }),
    notFound: route.notFound.replace(/\{([a-z_]+)\}/g, (_, p: string) => String(args[p] ?? '')),
    shape: route.shape,
  };
}

async function runUpstreamRead(
  route: UpstreamReadRoute,
  ctx: ToolContext<GatewayDeps>,
  args: Record<string, unknown>,
) {
  const answer = await readPlatform(ctx.caller, ctx.deps, upstreamReadRequest(route, args));
  if (route.shape === 'get') return { [route.result]: answer.data };
  if (route.shape === 'report') return { ...answer.rest, [route.result]: answer.data };
  return { [route.result]: answer.data, paging: answer.paging };
}

/** The change a prepare route asks the changes service to plan for `args`. */
export function prepareRequest(
  route: PrepareRoute,
  tool: string,
  args: Record<string, unknown>,
): MessageInitShape<typeof PrepareChangeRequestSchema> {
  return {
    accountId: String(args.account_id),
    tool,
    objectType: route.object,
    effect: route.effect,
    operation: {
      method: route.operation.method,
      path: bindPath(route.operation.path, args),
      bodyJson: JSON.stringify(route.body === undefined ? {} : args[route.body]),
    },
    targetPath: route.target === undefined ? '' : bindPath(route.target, args),
  };
}

async function runPrepare(
  route: PrepareRoute,
  ctx: ToolContext<GatewayDeps>,
  tool: string,
  args: Record<string, unknown>,
) {
  const { caller, deps } = ctx;
  const res = await deps.changes.prepareChange(
    prepareRequest(route, tool, args),
    onBehalfOf(caller.principal),
  );
  return changeView(res.change, deps.publicUrl);
}

/** runRoute runs `tool` for validated `args`. */
export function runRoute(
  tool: ToolDefinition<GatewayDeps>,
  ctx: ToolContext<GatewayDeps>,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const r = tool.route;
  switch (r.kind) {
    case 'rpc':
      return named(runRpc(r, ctx, args), serviceOf(r.method.parent.typeName));
    case 'upstream-read':
      return named(runUpstreamRead(r, ctx, args), 'upstream-proxy');
    case 'prepare':
      return named(runPrepare(r, ctx, tool.name, args), 'changes');
    case 'run':
      return r.run(ctx, args);
  }
}

/** The process that serves a proto service (`marketing.v1.MarketingService` -> marketing). */
function serviceOf(typeName: string): string {
  const pkg = typeName.split('.')[0] ?? typeName;
  return pkg === 'upstream' ? 'upstream-proxy' : pkg;
}

/** A route's result, whose failure to reach `service` names it (tool-call.ts says which part failed). */
async function named<T>(result: Promise<T>, service: string): Promise<T> {
  try {
    return await result;
  } catch (err) {
    throw nameUnreachable(err, service);
  }
}

const PLATFORM_OBJECT: JsonSchema = {
  type: 'object',
  description: 'The object as the ad platform reports it.',
};
const PAGING: JsonSchema = {
  type: 'object',
  properties: {
    after: { type: ['string', 'null'] },
    before: { type: ['string', 'null'] },
    has_more: { type: 'boolean' },
  },
  required: ['has_more'],
};

/** The result shapes of the gateway's route kinds. */
export const GATEWAY_ROUTE_SHAPES: RouteShapes = {
  change: CHANGE_OUTPUT,
  upstream(route) {
    if (route.shape === 'get') {
      return {
        type: 'object',
        properties: { [route.result]: PLATFORM_OBJECT },
        required: [route.result],
        additionalProperties: false,
      };
    }
    if (route.shape === 'report') {
      return {
        type: 'object',
        description: 'The rows, beside the other fields of the platform’s answer as it gives them.',
        properties: { [route.result]: { type: 'array', items: PLATFORM_OBJECT }, paging: PAGING },
        required: [route.result],
      };
    }
    return {
      type: 'object',
      properties: { [route.result]: { type: 'array', items: PLATFORM_OBJECT }, paging: PAGING },
      required: [route.result, 'paging'],
      additionalProperties: false,
    };
  },
  callRpc: rpcName(UpstreamService.method.call),
  prepareRpc: rpcName(ChangesService.method.prepareChange),
};
