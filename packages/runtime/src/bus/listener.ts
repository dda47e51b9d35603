/**
 * The LISTEN side of the outbox: one connection per transport that hears `NOTIFY bus_outbox`
 * (sent by a trigger when a message becomes due) and wakes whoever waits for that schema's
 * messages, so they need not poll often. Notifications are a hint: whoever subscribes also polls.
 */
import type { Pool, PoolClient } from '../db.ts';
import type { Logger } from '../log.ts';

/**
 * One LISTEN connection; calls each subscriber of a topic when a message of that topic is due,
 * and each subscriber of every topic (the Kafka relay) when any is.
 */
export class Listener {
  private client: PoolClient | undefined;
  private starting: Promise<void> | undefined;
  private schema = '';
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly subscribers = new Map<string, Set<() => void>>();
  private readonly anyTopic = new Set<() => void>();

  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
    private readonly reconnectDelayMs: number,
  ) {}

  /** start connects once; later calls wait for the same connection (or try again if it failed). */
  start(): Promise<void> {
    this.starting ??= this.connect().catch((err: unknown) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  /** subscribe calls `wake` when a message of `topic` becomes due; the result unsubscribes. */
  subscribe(topic: string, wake: () => void): () => void {
    let set = this.subscribers.get(topic);
    if (set === undefined) {
      set = new Set();
      this.subscribers.set(topic, set);
    }
    set.add(wake);
    return () => set.delete(wake);
  }

  /** subscribeAll calls `wake` when a message of any topic becomes due; the result unsubscribes. */
  subscribeAll(wake: () => void): () => void {
    this.anyTopic.add(wake);
    return () => this.anyTopic.delete(wake);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    // Closed rather than returned to the pool, which would keep it listening.
    client?.release(true);
  }

  private async connect(): Promise<void> {
    const client = await this.pool.connect();
    client.on('error', (err) => this.lost(client, err));
    client.on('notification', (n) => {
      if (n.channel !== 'bus_outbox' || n.payload === undefined) return;
      let target: { schema?: unknown; topic?: unknown };
      try {
        target = JSON.parse(n.payload) as typeof target;
      } catch {
        return; // not from our trigger; polling still finds whatever it was about
      }
      if (target.schema === this.schema && typeof target.topic === 'string') this.wake(target.topic);
    });
    try {
      const { rows } = await client.query<{ schema: string }>('SELECT current_schema() AS schema');
      this.schema = rows[0]?.schema ?? '';
      await client.query('LISTEN bus_outbox');
    } catch (err) {
      client.release(true);
      throw err;
    }
    if (this.stopped) {
      client.release(true);
      return;
    }
    this.client = client;
  }

  private lost(client: PoolClient, err: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.release(true);
    if (this.stopped) return;
    this.logger.warn({ err }, 'bus listen connection lost; polling until it is back');
    const retry = () => {
      this.reconnectTimer = undefined;
      if (this.stopped) return;
      this.connect().then(
        // Notifications sent while disconnected are gone: look once for everything.
        () => this.wakeAll(),
        (e: unknown) => {
          this.logger.warn({ err: e }, 'bus listen reconnect failed');
          this.reconnectTimer = setTimeout(retry, this.reconnectDelayMs);
        },
      );
    };
    this.reconnectTimer = setTimeout(retry, this.reconnectDelayMs);
  }

  private wake(topic: string): void {
    for (const wake of this.subscribers.get(topic) ?? []) wake();
    for (const wake of this.anyTopic) wake();
  }

  private wakeAll(): void {
    for (const topic of this.subscribers.keys()) this.wake(topic);
    for (const wake of this.anyTopic) wake();
  }
}
