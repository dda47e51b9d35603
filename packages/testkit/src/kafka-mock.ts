/**
 * A Kafka-protocol endpoint for tests on machines where no Kafka broker can be installed:
 * librdkafka's mock cluster, started through Debian's `kcat`.
 *
 * It is a protocol-level mock, NOT Kafka: brokers that speak the Kafka wire protocol (produce,
 * fetch, consumer groups, offset commits, topics created on first use with 4 partitions) from
 * one process, in memory. It does not replicate, persist, enforce most broker settings, or
 * support the admin client's topic creation or the idempotent producer; its consumer group
 * coordinator waits 3 s on a group's first join and most of a session timeout on each
 * rebalance. What passes here passes against the Kafka protocol as librdkafka implements it,
 * not against a real broker.
 *
 * `kcat -C -t keepalive` keeps the cluster alive (a consumer of an empty topic) and, with
 * `-d mock`, prints `bootstrap.servers=...` on stderr, followed by a debug line per request,
 * which are read and dropped.
 */
import { spawn } from 'node:child_process';

export interface KafkaMockCluster {
  /** The brokers' `host:port` list, comma-separated, as `KAFKA_BROKERS` takes it. */
  brokers: string;
  /** Stops the kcat process (and with it the cluster). */
  stop(): Promise<void>;
}

export interface KafkaMockOptions {
  /** Brokers in the cluster (default 3). */
  brokers?: number;
  /** The kcat binary (default `KCAT_PATH`, else `kcat` on the PATH). */
  kcat?: string;
  /** How long to wait for the bootstrap line (default 10 s). */
  startTimeoutMs?: number;
}

const BOOTSTRAP = /bootstrap\.servers=(\S+)/;

/** startKafkaMock starts a mock cluster and resolves with its brokers once it listens. */
export function startKafkaMock(opts: KafkaMockOptions = {}): Promise<KafkaMockCluster> {
  const kcat = opts.kcat ?? process.env.KCAT_PATH ?? 'kcat';
  const args = ['-b', '127.0.0.1:1', '-X', `test.mock.num.brokers=${opts.brokers ?? 3}`];
  args.push('-d', 'mock', '-C', '-t', 'keepalive', '-o', 'end', '-q');
  const child = spawn(kcat, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Should the test process die without stopping it, the cluster goes with it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.off('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
  };

  return new Promise((resolve, reject) => {
    let seen = '';
    let settled = false;
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop().then(() => reject(new Error(message)));
    };
    const timer = setTimeout(
      () => fail(`kcat printed no bootstrap.servers line in ${opts.startTimeoutMs ?? 10_000} ms:\n${seen}`),
      opts.startTimeoutMs ?? 10_000,
    );
    child.once('error', (err: NodeJS.ErrnoException) =>
      fail(
        err.code === 'ENOENT'
          ? `${kcat} is not installed: the Kafka tests need Debian's kcat (apt-get install -y kcat)`
          : `could not start ${kcat}: ${err.message}`,
      ),
    );
    void exited.then(() => fail(`kcat exited (code ${child.exitCode}) before the cluster started:\n${seen}`));
    child.stderr.on('data', (chunk: Buffer) => {
      if (settled) return; // the debug lines that follow are dropped
      seen = (seen + chunk.toString('utf8')).slice(-8000);
      const match = BOOTSTRAP.exec(seen);
      if (match?.[1] === undefined) return;
      settled = true;
      clearTimeout(timer);
      resolve({ brokers: match[1], stop });
    });
  });
}
