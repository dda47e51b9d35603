/**
 * One replica of a bus consumer on Kafka, as its own process, for consumer-kill.test.ts to kill.
 * It joins the consumer group `replicas` on the topic `replicated`; its handler records that it
 * started a message, works a while, then records the message's effect in the inbox transaction.
 * It prints `joined` once the group gave it its partitions.
 *
 * Environment: DATABASE_URL, BUS_SCHEMA, KAFKA_BROKERS, REPLICA (its name in the records),
 * HANDLER_MS (how long each message takes).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createKafkaTransport } from '@adsmcp/runtime/bus/index';
import { createPool } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
};

const replica = env('REPLICA');
const handlerMs = Number(env('HANDLER_MS'));
const pool = createPool(env('DATABASE_URL'), env('BUS_SCHEMA'));
const transport = createKafkaTransport({
  pool,
  logger: createLogger(`replica-${replica}`, process.env.BUS_TEST_LOG_LEVEL ?? 'silent'),
  brokers: env('KAFKA_BROKERS').split(','),
  clientId: `replica-${replica}`,
  sessionTimeoutMs: 6000,
  heartbeatIntervalMs: 500,
  fetchMaxWaitMs: 200,
  relayPollMs: 200,
});
await transport.consume({
  name: 'replicas',
  topic: 'replicated',
  concurrency: 2,
  handler: async (m, ctx) => {
    await pool.query('INSERT INTO starts (message_id, replica) VALUES ($1, $2)', [m.id, replica]);
    await sleep(handlerMs);
    await ctx.inTx((c) =>
      c.query('INSERT INTO effects (message_id, replica) VALUES ($1, $2)', [m.id, replica]),
    );
  },
});
process.stdout.write('joined\n');
process.once('SIGTERM', () => {
  void transport.stop().then(() => pool.end());
});
