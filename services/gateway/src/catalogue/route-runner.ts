/**
 * The one interpreter of tool routes (catalogue.ts): a service RPC, a read of the ad platform, a
 * prepared change, or a tool's own code. Every tool's path from `tools/call` to a service or the
 * ad platform is here or in the row's hand-written `run`.
 */
import { ChangesService, type PrepareChangeRequestSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { UpstreamService } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { nameUnreachable } from '@adsmcp/runtime/service-client';
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import type { CallOptions } from '@connectrpc/connect';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import {
  type PrepareRoute,
  pathParameters,
  type RouteShapes,
  type RpcPoll,
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
  const call = unaryCall(deps, route.method);
  const request = requestFrom(route.method.input, { ...args, ...route.fixed });
  const answered = await call(request, onBehalfOf(caller.principal, { timeoutMs: route.timeoutMs }));
  const response = route.poll === undefined ? answered : await polled(route, route.poll, ctx, answered);
  return route.view ? route.view(response, ctx) : resultOf(route.method.output, response);
}

/** The client's unary call of `method`, by the service's proto package (deps.clientOf). */
function unaryCall(deps: GatewayDeps, method: DescMethodUnary): UnaryCall {
  const call = (deps.clientOf(method.parent) as unknown as Record<string, UnaryCall>)[method.localName];
  if (call === undefined) throw new Error(`no client method for ${rpcName(method)}`);
  return call;
}

/** The value of `message`'s field whose proto name is `name` (the names are checked at start-up). */
function fieldValue(desc: DescMessage, message: MessageShape<DescMessage>, name: string): unknown {
  const field = desc.fields.find((f) => f.name === name);
  if (field === undefined) throw new Error(`${desc.typeName} has no field ${name}`);
  return (message as unknown as Record<string, unknown>)[field.localName];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The re-read's request: each of its fields `poll.request` names, from the work as last read. */
function rereadRequest(poll: RpcPoll, workDesc: DescMessage, work: MessageShape<DescMessage>) {
  const init = Object.entries(poll.request).map(([to, from]) => [
    poll.method.input.fields.find((f) => f.name === to)?.localName ?? to,
    fieldValue(workDesc, work, from),
  ]);
  return create(poll.method.input, Object.fromEntries(init));
}

/**
 * The answer once its work is final, or as the last read found it when `poll.withinMs` ran out
 * (catalogue.ts, RpcPoll). Reads start 10 ms apart and grow to 25 ms: work on the bus is often
 * done within milliseconds, and a read costs the service one indexed lookup.
 */
async function polled(
  route: RpcRoute<GatewayDeps>,
  poll: RpcPoll,
  ctx: ToolContext<GatewayDeps>,
  answered: MessageShape<DescMessage>,
): Promise<MessageShape<DescMessage>> {
  const workField = route.method.output.fields.find((f) => f.name === poll.field);
  if (workField?.fieldKind !== 'message')
    throw new Error(`${rpcName(route.method)} has no field ${poll.field}`);
  const workOf = (answer: MessageShape<DescMessage>, by: DescMethodUnary) => {
    const work = fieldValue(by.output, answer, poll.field) as MessageShape<DescMessage> | undefined;
    if (work === undefined) throw new Error(`${rpcName(by)} answered no ${poll.field}`);
    return work;
  };
  const statusOf = (work: MessageShape<DescMessage>) =>
    String(fieldValue(workField.message, work, poll.status));
  const reread = unaryCall(ctx.deps, poll.method);
  const options = onBehalfOf(ctx.caller.principal);
  let work = workOf(answered, route.method);
  await ctx.progress?.(poll.progress(work));
  const deadline = Date.now() + poll.withinMs;
  for (
    let wait = 10;
    !poll.final.includes(statusOf(work)) && Date.now() < deadline;
    wait = Math.min(25, wait * 1.5)
  ) {
    await sleep(wait);
    const next = workOf(await reread(rereadRequest(poll, workField.message, work), options), poll.method);
    if (statusOf(next) !== statusOf(work)) await ctx.progress?.(poll.progress(next));
    work = next;
  }
  return create(route.method.output, {
    ...answered,
    [workField.localName]: work,
  } as MessageInitShape<DescMessage>);
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
