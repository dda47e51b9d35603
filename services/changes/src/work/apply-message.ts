/**
 * The apply work on the bus: the message that asks the apply worker (apply-worker.ts) to send one
 * approved change, queued in the same transaction that moves the change to `applying`.
 */
import { enqueue } from '@adsmcp/runtime/bus/outbox';
import type { Queryable } from '@adsmcp/runtime/db';
import { findChange } from '../store/change-store.ts';

export const APPLY_TOPIC = 'changes.apply';

export interface ApplyMessage {
  [key: string]: string;
  change_id: string;
  workspace_id: string;
}

/** What an apply message's key is made of. */
export interface ApplyTarget {
  change_id: string;
  account_id: string;
  target_path: string;
}

/**
 * The key of a change's apply messages: the object it changes, so that the bus runs one apply per
 * object at a time (the consumer's `serialByKey`) and, on Kafka, keeps one object's applies on one
 * partition in order. Two approved changes to one object then run one after the other, and the
 * second finds the object changed and fails as stale: at once, both could pass the re-read before
 * either was sent, and the second would overwrite the first. A change that creates has no object
 * yet: it is keyed by itself, within its account.
 *
 * Every key starts with the account and a space: the PostgreSQL transport takes turns between
 * such key groups, so one account's backlog of applies never holds every worker slot while another
 * account's changes wait behind it (each account's pace is its own platform budget).
 */
export function applyKeyOf(change: ApplyTarget): string {
  return `${change.account_id} ${change.target_path === '' ? change.change_id : change.target_path}`;
}

/**
 * enqueueApply queues the apply of `change` in `tx`. `id` is the message's deterministic id (so a
 * request made twice queues one message); `delayMs` holds it back that long. The change's object
 * is read in `tx` when the caller does not pass it.
 */
export async function enqueueApply(
  tx: Queryable,
  change: { change_id: string; workspace_id: string } & Partial<ApplyTarget>,
  id: string,
  delayMs?: number,
): Promise<void> {
  const target = await targetOf(tx, change);
  const message: ApplyMessage = { change_id: change.change_id, workspace_id: change.workspace_id };
  await enqueue(tx, {
    topic: APPLY_TOPIC,
    key: applyKeyOf(target),
    payload: message,
    id,
    ...(delayMs === undefined ? {} : { delayMs }),
  });
}

async function targetOf(
  tx: Queryable,
  change: { change_id: string; workspace_id: string } & Partial<ApplyTarget>,
): Promise<ApplyTarget> {
  const { account_id: accountId, target_path: targetPath } = change;
  if (accountId !== undefined && targetPath !== undefined)
    return { change_id: change.change_id, account_id: accountId, target_path: targetPath };
  const row = await findChange(tx, change.workspace_id, change.change_id);
  if (row === undefined) throw new Error(`change ${change.change_id} is not in the changes table`);
  return row;
}
