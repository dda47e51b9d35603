import type { Pool, PoolClient } from '@adsmcp/runtime/db';

/**
 * Runs `rounds` of writing transactions, each round's at once, and while the last round's are
 * still committing, `read` in one repeatable-read snapshot. The property tests of the kept counts
 * compare two ways of reading the same rows (the store's against a plain query); in one snapshot
 * both see the same rows, while other transactions move the counts under them.
 */
export async function readWhileWriting<T>(
  pool: Pool,
  rounds: readonly (readonly T[])[],
  write: (tx: T) => Promise<void>,
  read: (reader: PoolClient) => Promise<void>,
): Promise<void> {
  for (const [i, round] of rounds.entries()) {
    const writes = Promise.all(round.map(write));
    if (i < rounds.length - 1) {
      await writes;
      continue;
    }
    const reader = await pool.connect();
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await read(reader);
      await reader.query('COMMIT');
      reader.release();
    } catch (err) {
      // A client left in a failed transaction is not given back to the pool.
      reader.release(true);
      throw err;
    } finally {
      await writes;
    }
  }
}

/**
 * Runs `steps` in one transaction on a client of `pool`, then commits it, or rolls it back when
 * `rollback` is set: the writers of the kept counts' property tests, some of whose transactions
 * roll back. Rolled back on any error, which is thrown again; the client is given back either way.
 */
export async function inTransaction(
  pool: Pool,
  rollback: boolean,
  steps: (client: PoolClient) => Promise<void>,
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await steps(client);
    await client.query(rollback ? 'ROLLBACK' : 'COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
