/**
 * The apply work on the bus: the message that asks the apply worker (apply-worker.ts) to send one
 * approved change, queued in the same transaction that moves the change to `applying`.
 */
import { enqueue } from '@adsmcp/runtime/bus/outbox';
import type { Queryable } from '@adsmcp/runtime/db';

export const APPLY_TOPIC = 'changes.apply';

export interface ApplyMessage {
  [key: string]: string;
  change_id: string;
  workspace_id: string;
}

/**
 * enqueueApply queues the apply of `change` in `tx`. `id` is the message's deterministic id (so a
 * request made twice queues one message); `delayMs` holds it back that long.
 */
export async function enqueueApply(
  tx: Queryable,
  change: { change_id: string; workspace_id: string },
  id: string,
  delayMs?: number,
): Promise<void> {
  const message: ApplyMessage = { change_id: change.change_id, workspace_id: change.workspace_id };
  await enqueue(tx, {
    topic: APPLY_TOPIC,
    key: change.change_id,
    payload: message,
    id,
    ...(delayMs === undefined ? {} : { delayMs }),
  });
}
