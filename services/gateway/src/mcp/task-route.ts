/**
 * The edge of the tasks extension on `POST /mcp` (2026-07-28): `tasks/get`, `tasks/update` and
 * `tasks/cancel` are answered here, since the SDK answers every method it does not know as not
 * found; `tasks/result` and `tasks/list`, which the extension's second version removed, are not
 * found. Their routing headers are checked as the SDK checks those of the methods it serves
 * (Mcp-Method, and Mcp-Name naming the task), and every refusal names the field and the rule.
 * Also here: the 2025-era answer to an ads_apply_change that awaits a person.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isDatabaseUnavailable, type Queryable } from '@adsmcp/runtime/db';
import { isRecord } from '@adsmcp/runtime/json';
import type { Caller } from '../catalogue/catalogue.ts';
import { awaitingPerson } from '../catalogue/tools/change-tools.ts';
import { declaredUrlElicitation } from './client-declarations.ts';
import { APPLY_TOOL, legacyElicitation } from './person-in-the-loop.ts';
import {
  cancelTask,
  declaresTasks,
  getTask,
  missingExtension,
  REMOVED_TASK_METHODS,
  TASK_METHODS,
  type TaskDeps,
  TaskRequestError,
  updateTask,
} from './tasks.ts';
import type { ToolResult } from './tool-call.ts';

/** The tasks method a body is one request of, or undefined. */
export function taskRequestMethod(body: unknown): string | undefined {
  if (!isRecord(body) || typeof body.method !== 'string') return undefined;
  return TASK_METHODS.has(body.method) || REMOVED_TASK_METHODS.has(body.method) ? body.method : undefined;
}

const HEADER_MISMATCH = -32020;
const METHOD_NOT_FOUND = -32601;
const MISSING_CAPABILITY = -32021;
const INTERNAL_ERROR = -32603;

/** A header's one value, as the SDK reads it (optional whitespace around it dropped). */
function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value.trim() : undefined;
}

/** An Mcp-Name value as sent: plain, or in the `=?base64?…?=` form for a value that is not a token. */
function decodedName(value: string): string | undefined {
  const m = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/.exec(value);
  if (m === null) return value;
  try {
    return Buffer.from(m[1] as string, 'base64').toString('utf8');
  } catch {
    return undefined;
  }
}

/** Why the routing headers do not match the body, or undefined when they do. */
export function headerProblem(
  headers: IncomingHttpHeaders,
  method: string,
  params: unknown,
): string | undefined {
  const named = header(headers, 'mcp-method');
  if (named === undefined)
    return `the body names method ${method} but the required Mcp-Method header is absent`;
  if (named !== method) return `the body names method ${method} but the Mcp-Method header names ${named}`;
  const taskId = isRecord(params) && typeof params.taskId === 'string' ? params.taskId : undefined;
  if (!TASK_METHODS.has(method) || taskId === undefined) return undefined;
  const name = header(headers, 'mcp-name');
  if (name === undefined)
    return `the body carries params.taskId="${taskId.slice(0, 100)}" but the required Mcp-Name header is absent`;
  const decoded = decodedName(name);
  if (decoded !== taskId)
    return `the body carries params.taskId="${taskId.slice(0, 100)}" but the Mcp-Name header names "${(decoded ?? name).slice(0, 100)}"`;
  return undefined;
}

interface Answer {
  status: number;
  /** None for a notification: 202 Accepted, no body. */
  body: Record<string, unknown> | undefined;
}

const INVALID_REQUEST = -32600;
const ENVELOPE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);

/** A JSON-RPC request id as MCP allows it: a string or an integer. */
const validId = (id: unknown) =>
  typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id));

/** What is wrong with a tasks request's JSON-RPC envelope, as the SDK holds other requests to it. */
function envelopeProblem(body: Record<string, unknown>): string | undefined {
  if (body.jsonrpc !== '2.0') return '`jsonrpc` must be "2.0"';
  if (!validId(body.id)) return '`id` must be a string or an integer';
  if (body.params !== undefined && !isRecord(body.params)) return '`params` must be an object';
  const extra = Object.keys(body).find((k) => !ENVELOPE_KEYS.has(k));
  if (extra !== undefined)
    return `unknown member \`${extra.slice(0, 100)}\` (a request has jsonrpc, id, method, params)`;
  return undefined;
}

function errorAnswer(status: number, id: unknown, code: number, message: string, data?: unknown): Answer {
  return {
    status,
    body: { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } },
  };
}

/** Answers one tasks request of a 2026-07-28 client (the route authenticated it and checked its body). */
export async function answerTasksRequest(
  d: TaskDeps,
  caller: Caller,
  requestId: string,
  headers: IncomingHttpHeaders,
  body: unknown,
): Promise<Answer> {
  if (!isRecord(body) || typeof body.method !== 'string') throw new Error('not a tasks request');
  const { id, method } = body;
  // A notification (no id) asks for no answer: a tasks method is a request, so nothing is done.
  if (!('id' in body)) return { status: 202, body: undefined };
  const invalid = envelopeProblem(body);
  if (invalid !== undefined)
    return errorAnswer(400, validId(id) ? id : null, INVALID_REQUEST, `Invalid request: ${invalid}`);
  const params = isRecord(body.params) ? body.params : {};
  if (header(headers, 'mcp-protocol-version') === undefined)
    return errorAnswer(
      400,
      id,
      HEADER_MISMATCH,
      'Header mismatch: the body carries a modern per-request envelope but the required MCP-Protocol-Version header is absent',
    );
  const mismatch = headerProblem(headers, method, body.params);
  if (mismatch !== undefined) return errorAnswer(400, id, HEADER_MISMATCH, `Header mismatch: ${mismatch}`);
  if (REMOVED_TASK_METHODS.has(method)) {
    return errorAnswer(
      404,
      id,
      METHOD_NOT_FOUND,
      `Method not found: ${method} (the ${method === 'tasks/result' ? 'result is in tasks/get once the task completed' : 'tasks extension lists no tasks: keep the taskId a tools/call returned'})`,
    );
  }
  if (!declaresTasks(params._meta)) {
    const e = missingExtension(method);
    return errorAnswer(400, id, MISSING_CAPABILITY, e.message, e.data);
  }
  try {
    const result =
      method === 'tasks/get'
        ? await getTask(d, caller, requestId, params)
        : method === 'tasks/cancel'
          ? await cancelTask(d, caller, params)
          : await updateTask(d, caller, params);
    return { status: 200, body: { jsonrpc: '2.0', id, result } };
  } catch (err) {
    if (err instanceof TaskRequestError) return errorAnswer(200, id, err.code, err.message, err.data);
    d.logger.warn({ err, method }, 'tasks request failed');
    const what = isDatabaseUnavailable(err)
      ? 'the gateway database is not answering'
      : 'it failed unexpectedly';
    return errorAnswer(
      200,
      id,
      INTERNAL_ERROR,
      `${method} could not be answered: ${what}; retry shortly (request ${requestId})`,
    );
  }
}

/**
 * A 2025-era client's answer to a call of ads_apply_change whose change awaits a person: the URL
 * elicitation required error (-32042, thrown for the SDK or the plain path to answer) when the
 * client declared URL elicitation in its last initialize with this credential; else the result.
 */
export async function legacyAnswer(
  db: Queryable,
  caller: Caller,
  tool: string,
  result: ToolResult,
): Promise<ToolResult> {
  if (tool !== APPLY_TOOL || awaitingPerson(result) === undefined) return result;
  const elicitation = legacyElicitation(
    tool,
    result,
    await declaredUrlElicitation(db, caller.principal.credentialId),
  );
  if (elicitation !== undefined) throw elicitation;
  return result;
}
