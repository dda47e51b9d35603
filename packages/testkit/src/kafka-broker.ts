/**
 * A real Apache Kafka for tests: one node, or a cluster of three, each a broker and a KRaft
 * controller in one JVM (`process.roles=broker,controller`), on 127.0.0.1 and ports chosen here,
 * with data in a temporary directory removed by `stop()`.
 *
 * The jars come from Maven (kafka-jars.ts, test/kafka/pom.xml). Each node's storage is formatted
 * with Kafka's own tool (`kafka.tools.StorageTool format`, what `kafka-storage.sh format` runs),
 * all with one cluster id and a static controller quorum, then the node runs as
 * `java -cp <jars> kafka.Kafka <server.properties>`. A node is ready when it logs that its server
 * started, which a broker does only once the controllers have let it in (unfenced).
 *
 * The topics' settings are those a production cluster of that size would have: replication of
 * the internal topics across all nodes, `min.insync.replicas` 2 on three nodes. Topics are not
 * created on first use (`auto.create.topics.enable=false`): the bus creates its own.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, type WriteStream, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePorts } from './free-port.ts';
import { clusterId } from './kafka-cluster-id.ts';
import { ensureKafkaJars } from './kafka-jars.ts';

export interface KafkaBrokerOptions {
  /** Nodes in the cluster (default 1). */
  brokers?: 1 | 3;
  /** More `server.properties` lines, or ones to replace, for every node. */
  properties?: Record<string, string>;
  /** How long one node may take to start (default 90 s: a JVM on a busy 2-core machine). */
  startTimeoutMs?: number;
}

export interface KafkaBrokerCluster {
  /** The nodes' `host:port` list, comma-separated, as `KAFKA_BROKERS` takes it. */
  brokers: string;
  /** The same, one address per node. */
  bootstrap: string[];
  /** Where the nodes' data and logs are (each node's log: `node-<i>.log`). */
  dir: string;
  /** Stops every node (controlled shutdown, SIGKILL after 30 s) and removes the data. */
  stop(): Promise<void>;
  /**
   * Stops every node (controlled shutdown) and starts it again on the same ports and data after
   * `downMs` (default 0); resolves once all are ready.
   */
  restart(opts?: { downMs?: number }): Promise<void>;
  /** Kills node `i` (0-based) with SIGKILL: no controlled shutdown, as when its machine dies. */
  kill(i: number): Promise<void>;
  /** Starts node `i` again after a kill, on the same port and data; resolves once it is ready. */
  start(i: number): Promise<void>;
}

/** The line a node logs once its server runs (a broker: once unfenced by the controllers). */
const STARTED = /Kafka Server started/;

interface Node {
  id: number;
  port: number;
  controllerPort: number;
  config: string;
  log: WriteStream;
  child: ChildProcess | undefined;
  exited: Promise<void> | undefined;
}

function properties(values: Record<string, string>): string {
  return `${Object.entries(values)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}

/** The JVM: small heap and quick start; these brokers carry test traffic on a shared 2-core machine. */
export const JVM_OPTIONS = [
  '-Xms64m',
  '-Xmx384m',
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-Djava.awt.headless=true',
  // slf4j-simple: warnings and errors, plus the line saying the server started.
  '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
  '-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info',
  '-Dorg.slf4j.simpleLogger.showDateTime=true',
];

function java(): string {
  return process.env.JAVA_PATH || 'java';
}

/** Runs `java` to its end; rejects with what it printed when it fails. */
function runJava(what: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(java(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error('java is not installed: the Kafka tests run the broker on a JVM (OpenJDK 17 or later)')
          : err,
      ),
    );
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${what} exited ${code}:\n${output}`)),
    );
  });
}

/** `count` nodes, each with its ports chosen and its log opened under `dir`; none started yet. */
async function allocateNodes(count: number, dir: string): Promise<Node[]> {
  const nodes: Node[] = [];
  const ports = await freePorts(2 * count);
  for (let i = 0; i < count; i++) {
    nodes.push({
      id: i + 1,
      port: ports[2 * i] as number,
      controllerPort: ports[2 * i + 1] as number,
      config: join(dir, `node-${i}.properties`),
      log: createWriteStream(join(dir, `node-${i}.log`), { flags: 'a' }),
      child: undefined,
      exited: undefined,
    });
  }
  return nodes;
}

/** Writes each node's `server.properties`: one static controller quorum of every node. */
async function writeNodeConfigs(
  nodes: Node[],
  dir: string,
  extra: Record<string, string> | undefined,
): Promise<void> {
  const voters = nodes.map((n) => `${n.id}@127.0.0.1:${n.controllerPort}`).join(',');
  const replication = String(nodes.length);
  const minInsync = nodes.length >= 3 ? '2' : '1';
  for (const [i, n] of nodes.entries()) {
    await writeFile(
      n.config,
      properties({
        'process.roles': 'broker,controller',
        'node.id': String(n.id),
        'controller.quorum.voters': voters,
        listeners: `PLAINTEXT://127.0.0.1:${n.port},CONTROLLER://127.0.0.1:${n.controllerPort}`,
        'advertised.listeners': `PLAINTEXT://127.0.0.1:${n.port}`,
        'controller.listener.names': 'CONTROLLER',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        'inter.broker.listener.name': 'PLAINTEXT',
        'log.dirs': join(dir, `data-${i}`),
        'auto.create.topics.enable': 'false',
        'num.partitions': '4',
        'default.replication.factor': replication,
        'min.insync.replicas': minInsync,
        'offsets.topic.replication.factor': replication,
        // Fewer partitions than the default 50: created in a moment when the first group joins.
        'offsets.topic.num.partitions': '6',
        'transaction.state.log.replication.factor': replication,
        'transaction.state.log.min.isr': minInsync,
        'transaction.state.log.num.partitions': '6',
        'share.coordinator.state.topic.replication.factor': replication,
        'share.coordinator.state.topic.min.isr': minInsync,
        // A group's first member starts at once instead of waiting 3 s for others.
        'group.initial.rebalance.delay.ms': '0',
        ...extra,
      }),
    );
  }
}

/** Formats every node's storage with one new cluster id. */
async function formatStorage(nodes: Node[], classpath: string): Promise<void> {
  const id = clusterId();
  await Promise.all(
    nodes.map((n) =>
      runJava(`formatting the storage of Kafka node ${n.id}`, [
        ...JVM_OPTIONS,
        '-cp',
        classpath,
        'kafka.tools.StorageTool',
        'format',
        '-t',
        id,
        '-c',
        n.config,
      ]),
    ),
  );
}

/** What keeps the nodes from outliving the test process. */
interface NodeGuard {
  killAll: () => void;
  /** Records the nodes' current pids for the watchdog. */
  writePids: () => void;
  watchdog: ChildProcess;
}

/**
 * Should the test process exit without stopping them, the nodes go with it; should it be
 * killed (a test runner's timeout), a watchdog kills the nodes whose pids it finds in `pids`
 * once this process is gone: JVMs left behind would hold memory on a shared machine.
 */
function guardNodes(nodes: Node[], dir: string): NodeGuard {
  const killAll = () => {
    for (const n of nodes) n.child?.kill('SIGKILL');
  };
  process.once('exit', killAll);
  const pidsFile = join(dir, 'pids');
  const writePids = () => writeFileSync(pidsFile, `${nodes.map((n) => n.child?.pid ?? '').join(' ')}\n`);
  writePids();
  const watchdog = spawn(
    'sh',
    [
      '-c',
      'while kill -0 "$1" 2>/dev/null; do sleep 1; done; kill -9 $(cat "$2") 2>/dev/null',
      'watchdog',
      String(process.pid),
      pidsFile,
    ],
    { stdio: 'ignore', detached: true },
  );
  watchdog.unref();
  return { killAll, writePids, watchdog };
}

/** Starts node `n`; resolves once it logs that its server started. */
function startNode(n: Node, classpath: string, startTimeoutMs: number, guard: NodeGuard): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(java(), [...JVM_OPTIONS, '-cp', classpath, 'kafka.Kafka', n.config], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    n.child = child;
    guard.writePids();
    n.exited = new Promise((done) => child.once('exit', () => done()));
    let seen = '';
    let ready = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`Kafka node ${n.id} did not start in ${startTimeoutMs} ms:\n${seen}`));
    }, startTimeoutMs);
    const onOutput = (chunk: Buffer) => {
      n.log.write(chunk);
      if (ready) return;
      seen = (seen + chunk.toString('utf8')).slice(-6000);
      if (STARTED.test(seen)) {
        ready = true;
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onOutput);
    child.stderr?.on('data', onOutput);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      if (ready) return;
      clearTimeout(timer);
      reject(new Error(`Kafka node ${n.id} exited (${signal ?? code}) before it started:\n${seen}`));
    });
  });
}

async function stopNode(n: Node, signal: NodeJS.Signals): Promise<void> {
  const child = n.child;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  // A controlled shutdown hands the node's partitions to the others first; it may take a while.
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await n.exited;
  clearTimeout(timer);
}

function nodeAt(nodes: Node[], i: number): Node {
  const n = nodes[i];
  if (n === undefined) throw new Error(`no Kafka node ${i}: the cluster has ${nodes.length} (0-based)`);
  return n;
}

/** startKafkaBroker formats and starts the nodes, resolving once every one of them is ready. */
export async function startKafkaBroker(opts: KafkaBrokerOptions = {}): Promise<KafkaBrokerCluster> {
  const startTimeoutMs = opts.startTimeoutMs ?? 90_000;
  const jars = await ensureKafkaJars();
  const dir = await mkdtemp(join(tmpdir(), 'adsmcp-kafka-'));
  const nodes = await allocateNodes(opts.brokers ?? 1, dir);
  await writeNodeConfigs(nodes, dir, opts.properties);
  await formatStorage(nodes, jars.classpath);
  const guard = guardNodes(nodes, dir);
  const start = (n: Node) => startNode(n, jars.classpath, startTimeoutMs, guard);
  try {
    await Promise.all(nodes.map(start));
  } catch (err) {
    await Promise.all(nodes.map((n) => stopNode(n, 'SIGKILL')));
    process.off('exit', guard.killAll);
    guard.watchdog.kill('SIGKILL');
    throw err;
  }

  const bootstrap = nodes.map((n) => `127.0.0.1:${n.port}`);
  return {
    brokers: bootstrap.join(','),
    bootstrap,
    dir,
    async stop() {
      process.off('exit', guard.killAll);
      await Promise.all(nodes.map((n) => stopNode(n, 'SIGTERM')));
      guard.watchdog.kill('SIGKILL');
      for (const n of nodes) n.log.end();
      await rm(dir, { recursive: true, force: true });
    },
    async restart({ downMs = 0 } = {}) {
      await Promise.all(nodes.map((n) => stopNode(n, 'SIGTERM')));
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      await Promise.all(nodes.map(start));
    },
    async kill(i) {
      await stopNode(nodeAt(nodes, i), 'SIGKILL');
    },
    async start(i) {
      const n = nodeAt(nodes, i);
      if (n.child !== undefined && n.child.exitCode === null && n.child.signalCode === null)
        throw new Error(`Kafka node ${i} is running`);
      await start(n);
    },
  };
}

/**
 * Run as a script (`node --import tsx packages/testkit/src/kafka-broker.ts [3]`), it starts a broker
 * (or a cluster of three) for trying the stack on Kafka by hand, prints its `KAFKA_BROKERS`, and
 * stops it and removes its data on Ctrl-C or SIGTERM.
 */
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const brokers = process.argv[2] === '3' ? 3 : 1;
  startKafkaBroker({ brokers }).then(
    (cluster) => {
      process.stdout.write(
        `KAFKA_BROKERS=${cluster.brokers}\n(data and logs in ${cluster.dir}; Ctrl-C stops)\n`,
      );
      const stop = () => void cluster.stop().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
