/**
 * The inbox: which messages each consumer has processed. Shared by every transport, since the
 * inbox lives in the consuming service's own database whatever carried the message.
 */
import { inTransaction, type Pool, type PoolClient, type Queryable } from '../db.ts';
import { AlreadyProcessedError } from './bus.ts';

/** isProcessed tells whether `consumer` has recorded `messageId` in its inbox. */
export async function isProcessed(db: Queryable, consumer: string, messageId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM bus_inbox WHERE consumer = $1 AND message_id = $2', [
    consumer,
    messageId,
  ]);
  return rowCount !== null && rowCount > 0;
}

/**
 * inInboxTransaction runs `fn` in a transaction that first records `messageId` in `consumer`'s
 * inbox. The inbox row is written first so that a second delivery running at the same moment
 * waits on it, then finds it committed and gets `AlreadyProcessedError` (with `fn` never run)
 * instead of repeating the effect; if the first one rolls back, the second goes ahead.
 */
export function inInboxTransaction<T>(
  pool: Pool,
  consumer: string,
  messageId: string,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  return inTransaction(pool, async (client) => {
    const { rowCount } = await client.query({
      name: 'bus-inbox-record',
      text: 'INSERT INTO bus_inbox (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      values: [consumer, messageId],
    });
    if (rowCount === 0) throw new AlreadyProcessedError(consumer, messageId);
    return fn(client);
  });
}
