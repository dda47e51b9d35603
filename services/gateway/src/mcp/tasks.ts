/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, protocol 2026-07-28) for the long work: a
 * client that declares the extension and calls a task tool gets a task at once (a CreateTaskResult)
 * and follows it with `tasks/get` until it ends with the tool's result. The SDK does not serve this
 * extension, so its wire shapes are written here, as the conformance package checks them.
 *
 * Tasks are rows of the gateway's database, owned by the credential that created them (another is
 * told the task does not exist), kept for TASK_TTL_MS: any replica answers for any task and a
 * restart loses none. How a task moves on:
 * - ads_apply_change is advanced by each `tasks/get`, from the change's status in the changes
 *   service: while a person has not decided, it waits (and says so, with the review page); once
 *   they approved, the apply is requested (once: a conditional update decides which `tasks/get`
 *   does it, and the changes service applies a change at most once anyway), and the task ends with
 *   the change's outcome. Polling the change needs no worker, no bus message and no timer to
 *   survive a restart: the change's status is the state, and a client that stops asking leaves
 *   nothing running.
 * - any other task tool runs in the gateway process that created it, which holds the task (a
 *   lease renewed while it runs). A task whose holder is gone (a restart) is run again by the next
 *   `tasks/get` when the tool is idempotent (a performance import: the same content answers the
 *   first import), and otherwise ends failed, saying its outcome is unknown and where to look.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '@adsmcp/runtime/db';
import { isRecord } from '@adsmcp/runtime/json';
import type { Logger } from '@adsmcp/runtime/log';
import { Code, ConnectError } from '@connectrpc/connect';
import { ProtocolError } from '@modelcontextprotocol/server';
import type { Caller, Catalogue, ProgressUpdate } from '../catalogue/catalogue.ts';
import { appliedOrFailure, statusWord } from '../catalogue/change-view.ts';
import { validate } from '../catalogue/schema.ts';
import { awaitingPerson, reviewUrl } from '../catalogue/tools/change-tools.ts';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { requestCapabilities } from './person-in-the-loop.ts';
import { callTool, fromServiceError, type ToolResult, toolError, toolSuccess } from './tool-call.ts';
import { ToolFailure } from './tool-failure.ts';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The tools a client that declared the extension gets a task for: the ones that wait. */
export const TASK_TOOLS: ReadonlySet<string> = new Set([
  'ads_apply_change',
  'ads_import_performance',
  'ads_create_performance_report',
]);

/** How long a task is kept: longer than a change may wait for a person (72 hours by default). */
export const TASK_TTL_MS = 7 * 24 * 3_600_000;
/** How often a client is told to ask: a person's decision and an apply are seconds apart at best. */
export const POLL_INTERVAL_MS = 2000;
/** How long a gateway process holds a task it runs without renewing; renewed at a third of it. */
const HOLD_MS = 60_000;

/** The methods of the extension, and the ones its second version removed. */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);
export const REMOVED_TASK_METHODS: ReadonlySet<string> = new Set(['tasks/result', 'tasks/list']);

/** JSON-RPC errors of the extension. */
const INVALID_PARAMS = -32602;
const MISSING_CAPABILITY = -32021;
const INTERNAL_ERROR = -32603;

/**
 * How long after an apply was requested a change still only approved means the request was lost:
 * longer than the call may take (its deadline, and the tool's wait for the outcome).
 */
const APPLY_REQUEST_LAPSES_MS = 60_000;

/** The codes of a service that did not answer, or held the call back: a later tasks/get tries again. */
const UNANSWERED: ReadonlySet<Code> = new Set([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.ResourceExhausted,
  Code.Canceled,
]);

type Status = 'working' | 'completed' | 'failed' | 'cancelled';

interface TaskRow {
  task_id: string;
  tool: string;
  arguments: Record<string, unknown>;
  status: Status;
  status_message: string;
  result: ToolResult | null;
  error: { code: number; message: string; data?: unknown } | null;
  apply_requested: boolean;
  held_until: Date | null;
  created_at: Date;
  last_updated_at: Date;
  ttl_ms: number;
}

export interface TaskDeps {
  db: Queryable;
  catalogue: Catalogue<GatewayDeps>;
  deps: GatewayDeps;
  logger: Logger;
}

/** A refusal of a tasks request, as the JSON-RPC error to answer with. */
export class TaskRequestError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'TaskRequestError';
  }
}

/** Whether a 2026-07-28 request's `_meta` declares the tasks extension. */
export function declaresTasks(meta: unknown): boolean {
  const caps = requestCapabilities(meta);
  return isRecord(caps) && isRecord(caps.extensions) && isRecord(caps.extensions[TASKS_EXTENSION]);
}

/** The error for a tasks request from a client that did not declare the extension. */
export function missingExtension(method: string): TaskRequestError {
  return new TaskRequestError(
    MISSING_CAPABILITY,
    `${method} needs the ${TASKS_EXTENSION} extension: declare it in the request's client capabilities (_meta "io.modelcontextprotocol/clientCapabilities".extensions)`,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  );
}

/** Whether a tools/call of `name` with `args` is run as a task for this caller. */
export function runsAsTask(d: TaskDeps, caller: Caller, name: string, args: unknown, meta: unknown): boolean {
  if (!TASK_TOOLS.has(name) || !declaresTasks(meta)) return false;
  const tool = d.catalogue.byName.get(name);
  // Arguments the tool refuses, or a feature the workspace lacks, are answered at once as the tool's error.
  return (
    tool !== undefined &&
    validate(tool.input, args ?? {}).length === 0 &&
    tool.features.every((f) => caller.features.includes(f))
  );
}

const iso = (d: Date) => d.toISOString();

/** The fields every task answer carries (the extension's Task). */
function taskFields(t: TaskRow) {
  return {
    taskId: t.task_id,
    status: t.status,
    ...(t.status_message === '' ? {} : { statusMessage: t.status_message }),
    createdAt: iso(t.created_at),
    lastUpdatedAt: iso(t.last_updated_at),
    ttlMs: t.ttl_ms,
    pollIntervalMs: POLL_INTERVAL_MS,
  };
}

/** `tasks/get`'s answer: the task, with the tool's result once completed or the error once failed. */
function detailedTask(t: TaskRow): Record<string, unknown> {
  return {
    resultType: 'complete',
    ...taskFields(t),
    ...(t.status === 'completed' && t.result !== null ? { result: t.result } : {}),
    ...(t.status === 'failed' && t.error !== null ? { error: t.error } : {}),
  };
}

const COLUMNS =
  'task_id, tool, arguments, status, status_message, result, error, apply_requested, held_until, created_at, last_updated_at, ttl_ms';

function firstMessage(tool: string): string {
  return tool === 'ads_apply_change'
    ? 'Reading the change'
    : 'Queued: the gateway runs it now; tasks/get shows its progress';
}

/** Creates the task of a tools/call and starts its work; answers with the CreateTaskResult. */
export async function createTask(
  d: TaskDeps,
  caller: Caller,
  requestId: string,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  try {
    return await insertTask(d, caller, requestId, name, args);
  } catch (err) {
    d.logger.warn({ err, tool: name }, 'task not created');
    throw new ProtocolError(
      INTERNAL_ERROR,
      `the task could not be created, so nothing was started: the gateway database did not answer; retry shortly (request ${requestId})`,
    );
  }
}

async function insertTask(
  d: TaskDeps,
  caller: Caller,
  requestId: string,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  // Expired tasks of this credential go as it creates new ones: nothing else needs to sweep them.
  await d.db.query('DELETE FROM mcp_tasks WHERE credential_id = $1 AND expires_at <= now()', [
    caller.principal.credentialId,
  ]);
  const held = name === 'ads_apply_change' ? null : new Date(Date.now() + HOLD_MS);
  const { rows } = await d.db.query<TaskRow>(
    `INSERT INTO mcp_tasks (task_id, workspace_id, credential_id, tool, arguments, status, status_message, held_until, ttl_ms, expires_at)
     VALUES ($1, $2, $3, $4, $5, 'working', $6, $7, $8::integer, now() + $8::integer * interval '1 millisecond')
     RETURNING ${COLUMNS}`,
    [
      randomUUID(),
      caller.principal.workspaceId,
      caller.principal.credentialId,
      name,
      JSON.stringify(args),
      firstMessage(name),
      held,
      TASK_TTL_MS,
    ],
  );
  const task = rows[0] as TaskRow;
  if (name !== 'ads_apply_change') startHeld(d, caller, requestId, task);
  return { resultType: 'task', ...taskFields(task) };
}

/** The caller's task, or the extension's error for a task that is not theirs or no longer kept. */
async function load(d: TaskDeps, caller: Caller, taskId: unknown): Promise<TaskRow> {
  if (typeof taskId !== 'string' || taskId === '')
    throw new TaskRequestError(
      INVALID_PARAMS,
      'Invalid params: `taskId` is required: a string naming a task',
    );
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(taskId);
  const { rows } = uuid
    ? await d.db.query<TaskRow>(
        `SELECT ${COLUMNS} FROM mcp_tasks WHERE task_id = $1 AND credential_id = $2 AND expires_at > now()`,
        [taskId, caller.principal.credentialId],
      )
    : { rows: [] };
  const task = rows[0];
  if (task === undefined)
    throw new TaskRequestError(
      INVALID_PARAMS,
      `Invalid params: task not found: ${taskId.slice(0, 100)} (a task is known only to the credential that created it, for ttlMs after it was created)`,
      { taskId: taskId.slice(0, 100) },
    );
  return task;
}

/** Sets a working task's state; a task that ended meanwhile (cancelled) keeps its end. */
async function settle(
  d: TaskDeps,
  taskId: string,
  to: { status: Status; message: string; result?: ToolResult; error?: TaskRow['error'] },
): Promise<void> {
  await d.db.query(
    `UPDATE mcp_tasks SET status = $2, status_message = $3, result = $4, error = $5, last_updated_at = now()
      WHERE task_id = $1 AND status = 'working'`,
    [
      taskId,
      to.status,
      to.message,
      to.result === undefined ? null : JSON.stringify(to.result),
      to.error === undefined ? null : JSON.stringify(to.error),
    ],
  );
}

async function say(d: TaskDeps, taskId: string, message: string): Promise<void> {
  await d.db.query(
    `UPDATE mcp_tasks SET status_message = $2, last_updated_at = now()
      WHERE task_id = $1 AND status = 'working' AND status_message <> $2`,
    [taskId, message],
  );
}

/** The JSON-RPC error a task ends with when the tool could not run at all. */
function protocolError(err: unknown): NonNullable<TaskRow['error']> {
  if (err instanceof ProtocolError) return { code: err.code, message: err.message };
  return {
    code: INTERNAL_ERROR,
    message: 'the tool failed unexpectedly; nothing more is known to the caller',
  };
}

/**
 * Starts running a held task in the background. A failure to record its end (the database gone)
 * is logged, never thrown: the hold runs out and the next tasks/get takes the task up.
 */
function startHeld(d: TaskDeps, caller: Caller, requestId: string, task: TaskRow): void {
  runHeld(d, caller, requestId, task).catch((err: unknown) =>
    d.logger.warn({ err, task_id: task.task_id }, 'task end not recorded'),
  );
}

/** Runs a held task's tool in this process, renewing the hold, and settles the task with its result. */
async function runHeld(d: TaskDeps, caller: Caller, requestId: string, task: TaskRow): Promise<void> {
  const renew = setInterval(() => {
    d.db
      .query(
        `UPDATE mcp_tasks SET held_until = now() + $2::integer * interval '1 millisecond' WHERE task_id = $1 AND status = 'working'`,
        [task.task_id, HOLD_MS],
      )
      .catch((err: unknown) => d.logger.warn({ err, task_id: task.task_id }, 'task hold not renewed'));
  }, HOLD_MS / 3);
  const progress = async (update: ProgressUpdate) => {
    if (update.message !== undefined)
      await say(d, task.task_id, update.message).catch((err: unknown) =>
        d.logger.info({ err }, 'task progress not saved'),
      );
  };
  try {
    const run = () =>
      callTool(
        { catalogue: d.catalogue, deps: d.deps, logger: d.logger },
        caller,
        requestId,
        task.tool,
        task.arguments,
        progress,
      );
    let result = await run();
    // The tool answers after a bounded wait; the task's result is the job's end, so an unfinished
    // job is asked for again (the same import again answers the first one), while the task is working.
    while (unfinishedJob(result) && (await stillWorking(d, task.task_id))) result = await run();
    await settle(d, task.task_id, { status: 'completed', message: ended(result), result });
  } catch (err) {
    d.logger.warn({ err, task_id: task.task_id }, 'task tool could not run');
    await settle(d, task.task_id, {
      status: 'failed',
      message: 'The tool could not run',
      error: protocolError(err),
    });
  } finally {
    clearInterval(renew);
  }
}

/** Whether a tool's result is of a job still queued or running (a performance import's). */
function unfinishedJob(result: ToolResult): boolean {
  if (result.isError) return false;
  const job = result.structuredContent.import;
  return isRecord(job) && (job.status === 'queued' || job.status === 'running');
}

async function stillWorking(d: TaskDeps, taskId: string): Promise<boolean> {
  const { rows } = await d.db.query<{ status: Status }>('SELECT status FROM mcp_tasks WHERE task_id = $1', [
    taskId,
  ]);
  return rows[0]?.status === 'working';
}

function ended(result: ToolResult): string {
  return result.isError ? 'Ended with the tool’s error: see result' : 'Done: see result';
}

/** A held task whose holder is gone: run again when the tool is idempotent, else failed with why. */
async function takeUpLost(d: TaskDeps, caller: Caller, requestId: string, task: TaskRow): Promise<void> {
  const tool = d.catalogue.byName.get(task.tool);
  const { rowCount } = await d.db.query(
    `UPDATE mcp_tasks SET held_until = now() + $2::integer * interval '1 millisecond', last_updated_at = now()
      WHERE task_id = $1 AND status = 'working' AND held_until < now()`,
    [task.task_id, HOLD_MS],
  );
  if (rowCount !== 1) return;
  if (tool?.idempotent === true) {
    await say(d, task.task_id, 'Running again: the gateway process that ran it stopped');
    startHeld(d, caller, requestId, task);
    return;
  }
  await settle(d, task.task_id, {
    status: 'failed',
    message: 'The gateway process running it stopped before it ended',
    error: {
      code: INTERNAL_ERROR,
      message: `the gateway process running ${task.tool} stopped before it ended, so its outcome is unknown; check with the list tools before calling it again`,
    },
  });
}

/**
 * Moves an ads_apply_change task on from its change's status: waiting while a person has not
 * decided; requesting the apply once they did (or once it is anything else, so that the tool's own
 * answer, such as a rejection, ends the task); then ending with the change's outcome.
 */
async function advanceApply(d: TaskDeps, caller: Caller, requestId: string, task: TaskRow): Promise<void> {
  const changeId = String(task.arguments.change_id);
  const options = onBehalfOf(caller.principal);
  if (task.apply_requested) {
    const change = (await d.deps.changes.getChange({ changeId }, options)).change;
    if (change !== undefined && statusWord(change) === 'approved') {
      // The request for the apply did not reach the changes service (it did not answer): a later
      // tasks/get requests it again. Only once the request is older than any call may last, so
      // one still on its way (from another replica) is not requested twice.
      await d.db.query(
        `UPDATE mcp_tasks SET apply_requested = false, last_updated_at = now()
          WHERE task_id = $1 AND status = 'working' AND apply_requested
            AND last_updated_at < now() - $2::integer * interval '1 millisecond'`,
        [task.task_id, APPLY_REQUEST_LAPSES_MS],
      );
      return;
    }
    if (change !== undefined && statusWord(change) === 'applying') {
      // While an outage holds the apply, the change's error names the part it waits for.
      await say(
        d,
        task.task_id,
        change.error === undefined
          ? 'Approved; being applied on the ad platform (queued for the apply worker, then sent)'
          : `Approved; the apply waits and is tried again: ${change.error}`,
      );
      return;
    }
    let result: ToolResult;
    try {
      result = toolSuccess(appliedOrFailure(change, d.deps.publicUrl));
    } catch (err) {
      if (!(err instanceof ToolFailure)) throw err;
      result = toolError(err.code, err.message, err.extra);
    }
    await endApply(d, caller, requestId, task, result);
    return;
  }
  const change = (await d.deps.changes.getChange({ changeId }, options)).change;
  if (change !== undefined && statusWord(change) === 'prepared') {
    await say(
      d,
      task.task_id,
      `Waiting for a person to approve or reject the change in the dashboard: ${reviewUrl(d.deps.publicUrl, changeId)}`,
    );
    return;
  }
  // One tasks/get requests the apply, whichever replica answers it.
  const { rowCount } = await d.db.query(
    `UPDATE mcp_tasks SET apply_requested = true, status_message = 'Apply requested', last_updated_at = now()
      WHERE task_id = $1 AND status = 'working' AND NOT apply_requested`,
    [task.task_id],
  );
  if (rowCount !== 1) return;
  const result = await callTool(
    { catalogue: d.catalogue, deps: d.deps, logger: d.logger },
    caller,
    requestId,
    task.tool,
    task.arguments,
  );
  if (awaitingPerson(result) !== undefined) {
    // Rejected back to prepared cannot happen; a status read just before a concurrent change is read again.
    await d.db.query('UPDATE mcp_tasks SET apply_requested = false WHERE task_id = $1', [task.task_id]);
    return;
  }
  const waiting = unanswered(result);
  if (waiting !== undefined) {
    // Whether the request reached the changes service is not known: the task follows the change
    // (the branch above), which requests the apply again if it is still only approved.
    await say(d, task.task_id, `Waiting: ${waiting}`);
    return;
  }
  const view = result.structuredContent;
  if (!result.isError && view.status === 'applying') {
    await say(
      d,
      task.task_id,
      'Approved; being applied on the ad platform (queued for the apply worker, then sent)',
    );
    return;
  }
  await endApply(d, caller, requestId, task, result);
}

/**
 * The message of a tool error that says a service did not answer, or held the call back for its
 * rate (`unavailable`, `rate_limited`): what a later tasks/get may find otherwise, so it does not
 * end the task.
 */
function unanswered(result: ToolResult): string | undefined {
  if (!result.isError) return undefined;
  const error = result.structuredContent.error;
  if (!isRecord(error) || (error.code !== 'unavailable' && error.code !== 'rate_limited')) return undefined;
  return String(error.message);
}

/**
 * Ends an apply task with the apply's result, unless the change started a bulk job on the ad
 * platform (an ad batch) that is still queued or running: then the task waits for the job, and
 * says how far it is (ads_get_bulk_job shows each operation's outcome once it ended).
 */
async function endApply(
  d: TaskDeps,
  caller: Caller,
  requestId: string,
  task: TaskRow,
  result: ToolResult,
): Promise<void> {
  const running = await runningBulkJob(d, caller, requestId, result);
  if (running !== undefined) {
    await say(d, task.task_id, running);
    return;
  }
  await settle(d, task.task_id, { status: 'completed', message: ended(result), result });
}

/** What the platform's bulk job an applied change started is doing, while it is queued or running. */
async function runningBulkJob(
  d: TaskDeps,
  caller: Caller,
  requestId: string,
  result: ToolResult,
): Promise<string | undefined> {
  if (result.isError) return undefined;
  const { operation, upstream_response: job, account_id } = result.structuredContent;
  if (!isRecord(operation) || operation.path !== '/bulk_mutation_jobs') return undefined;
  if (!isRecord(job) || typeof job.id !== 'string') return undefined;
  const read = await callTool(
    { catalogue: d.catalogue, deps: d.deps, logger: d.logger },
    caller,
    requestId,
    'ads_get_bulk_job',
    { account_id, job_id: job.id },
  );
  // A job that cannot be read now is not waited for: the apply's result says how to follow it.
  const now = read.isError ? undefined : read.structuredContent.job;
  if (!isRecord(now) || (now.status !== 'queued' && now.status !== 'running')) return undefined;
  return `Applied; the ad platform runs bulk job ${job.id} (${String(now.status)}): ${String(now.processed_count ?? 0)} of ${String(now.operation_count ?? '?')} operations processed`;
}

/** Moves a working task on, as far as can be known now. */
async function advance(d: TaskDeps, caller: Caller, requestId: string, task: TaskRow): Promise<void> {
  if (task.status !== 'working') return;
  try {
    if (task.tool === 'ads_apply_change') await advanceApply(d, caller, requestId, task);
    else if (task.held_until !== null && task.held_until.getTime() < Date.now())
      await takeUpLost(d, caller, requestId, task);
  } catch (err) {
    // A service that does not answer just now leaves the task as it was: the next tasks/get tries again.
    if (err instanceof ConnectError && UNANSWERED.has(err.code)) {
      await say(d, task.task_id, `Waiting: a service it needs did not answer just now (${err.rawMessage})`);
      return;
    }
    // A refusal (no such change in the caller's workspace, not theirs to apply) is the tool's own
    // answer, as a call without a task gets it at once: it ends the task.
    if (err instanceof ConnectError && err.code !== Code.Internal && err.code !== Code.Unknown) {
      const behavior = d.catalogue.byName.get(task.tool)?.behavior ?? 'read';
      const result = fromServiceError(err, requestId, behavior, d.deps.publicUrl);
      await settle(d, task.task_id, { status: 'completed', message: ended(result), result });
      return;
    }
    d.logger.error({ err, task_id: task.task_id }, 'task could not move on');
    await settle(d, task.task_id, {
      status: 'failed',
      message: 'The task could not go on',
      error: protocolError(err),
    });
  }
}

/** `tasks/get`: the task as it is now, moved on first. */
export async function getTask(
  d: TaskDeps,
  caller: Caller,
  requestId: string,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const task = await load(d, caller, params.taskId);
  await advance(d, caller, requestId, task);
  return detailedTask(await load(d, caller, task.task_id));
}

/**
 * `tasks/cancel`: a working task ends cancelled; an ended one keeps its end (the same ack). A
 * cancelled apply task requests nothing more; an apply it requested already goes on, and
 * ads_get_change shows its outcome.
 */
export async function cancelTask(
  d: TaskDeps,
  caller: Caller,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const task = await load(d, caller, params.taskId);
  await d.db.query(
    `UPDATE mcp_tasks SET status = 'cancelled', last_updated_at = now(),
            status_message = CASE WHEN apply_requested
              THEN 'Cancelled after the apply was requested: the change is applied still; ads_get_change shows its outcome'
              ELSE 'Cancelled' END
      WHERE task_id = $1 AND status = 'working'`,
    [task.task_id],
  );
  return { resultType: 'complete' };
}

/**
 * `tasks/update`: these tasks never ask the client for input (a person decides in the dashboard,
 * not through the client), so there is nothing to resume; the answers are checked and acknowledged.
 */
export async function updateTask(
  d: TaskDeps,
  caller: Caller,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  await load(d, caller, params.taskId);
  if (!isRecord(params.inputResponses))
    throw new TaskRequestError(
      INVALID_PARAMS,
      'Invalid params: `inputResponses` must be an object mapping input request keys to responses',
    );
  return { resultType: 'complete' };
}
