/**
 * The Apache Kafka broker of kafka-broker.ts in a Docker container through Testcontainers: the same
 * Kafka (the jars Maven fetches from test/kafka/pom.xml) and the same settings, one KRaft node that
 * is broker and controller, run from an image built on this machine as the PostgreSQL image is
 * (pg-container.ts): no image registry can be reached here.
 *
 * The image is a minimal Debian bookworm from debootstrap (through the shared package cache,
 * docker.ts) with Debian's `openjdk-17-jre-headless`, the broker's jars in `/opt/kafka/libs` and an
 * entrypoint that writes `server.properties` from the environment, formats the storage on the
 * first start and runs `kafka.Kafka` as the container's main process (so `docker stop`'s SIGTERM
 * is the broker's controlled shutdown). Its tag holds a digest of the pom and the entrypoint, so a
 * new Kafka version or a new entrypoint is a new image, and an unchanged one is never rebuilt.
 *
 * The container shares the host's network namespace and listens on 127.0.0.1 at ports chosen
 * here, as the PostgreSQL container does: nothing leaves the loopback interface, and the address
 * the broker advertises is the one clients use.
 */
import { createHash } from 'node:crypto';
import { chmod, cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  GenericContainer,
  getContainerRuntimeClient,
  ImageName,
  type StartedTestContainer,
  Wait,
} from 'testcontainers';
import { debootstrap, imageExists, importRoot, removeTree } from './docker.ts';
import { freePorts } from './free-port.ts';
import { JVM_OPTIONS } from './kafka-broker.ts';
import { CLUSTER_ID_SH } from './kafka-cluster-id.ts';
import { ensureKafkaJars, KAFKA_POM } from './kafka-jars.ts';

// As in pg-container.ts: the reaper is an image from a registry; every container is stopped by its owner.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';

/** Debian's packages the image holds besides minbase: the JRE the broker runs on. */
const PACKAGES = ['openjdk-17-jre-headless'];

/**
 * Writes the broker's configuration from the environment (the settings kafka-broker.ts gives one
 * node), formats the storage once, then becomes the broker. `KAFKA_EXTRA_PROPERTIES` holds more
 * `name=value` lines, or ones to replace: the last of a name in a properties file is the one read.
 */
const ENTRYPOINT = `#!/bin/sh
set -eu
NODE_ID="\${KAFKA_NODE_ID:-1}"
HOST="\${KAFKA_HOST:-127.0.0.1}"
PORT="\${KAFKA_PORT:-9092}"
CONTROLLER_PORT="\${KAFKA_CONTROLLER_PORT:-9093}"
ADVERTISED="\${KAFKA_ADVERTISED_HOST:-$HOST}"
DATA=/var/lib/kafka/data
CONFIG=/etc/kafka/server.properties
JVM="\${KAFKA_JVM_OPTS:-${JVM_OPTIONS.join(' ')}}"
CP='/opt/kafka/libs/*'
${CLUSTER_ID_SH}
mkdir -p "$DATA" /etc/kafka
cat > "$CONFIG" <<EOF
process.roles=broker,controller
node.id=$NODE_ID
controller.quorum.voters=$NODE_ID@$HOST:$CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$ADVERTISED:$PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$DATA
auto.create.topics.enable=false
num.partitions=4
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=6
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
if [ -n "\${KAFKA_EXTRA_PROPERTIES:-}" ]; then
  printf '%s\\n' "$KAFKA_EXTRA_PROPERTIES" >> "$CONFIG"
fi
if [ ! -f "$DATA/meta.properties" ]; then
  ID="\${KAFKA_CLUSTER_ID:-$(new_cluster_id)}"
  case "$ID" in
    -*) echo "KAFKA_CLUSTER_ID must not start with '-' (the storage tool reads it as an option): $ID" >&2; exit 64 ;;
  esac
  # shellcheck disable=SC2086
  java $JVM -cp "$CP" kafka.tools.StorageTool format -t "$ID" -c "$CONFIG"
fi
# shellcheck disable=SC2086
exec java $JVM -cp "$CP" kafka.Kafka "$CONFIG"
`;

/** The tag of the image for the pom's Kafka version: `adsmcp/kafka-debian:<version>-<digest>`. */
export async function localKafkaImage(): Promise<string> {
  const pom = await readFile(KAFKA_POM, 'utf8');
  const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1] ?? 'unknown';
  const digest = createHash('sha256')
    .update(pom)
    .update(ENTRYPOINT)
    .update(PACKAGES.join(','))
    .digest('hex')
    .slice(0, 12);
  return `adsmcp/kafka-debian:${version}-${digest}`;
}

/**
 * Builds the broker image unless the engine has it: debootstrap a minimal bookworm with the JRE,
 * copy the Maven-fetched jars and the entrypoint in, `docker import` the tree. Needs root,
 * debootstrap, Maven (for the jars, when not cached) and a running engine. Returns whether it built.
 */
export async function ensureLocalKafkaImage(log: (line: string) => void = () => undefined): Promise<boolean> {
  const image = await localKafkaImage();
  if (await imageExists(image)) return false;
  const root = await mkdtemp(join(tmpdir(), 'adsmcp-kafka-rootfs-'));
  const logFile = `${root}.log`;
  try {
    log(`debootstrap bookworm with ${PACKAGES.join(' ')} into ${root} (log ${logFile})`);
    const [jars] = await Promise.all([ensureKafkaJars(), debootstrap(root, PACKAGES, logFile)]);
    await cp(jars.dir, join(root, 'opt/kafka/libs'), {
      recursive: true,
      filter: (src) => src === jars.dir || src.endsWith('.jar'),
    });
    const entrypoint = join(root, 'usr/local/bin/adsmcp-kafka-entrypoint');
    await writeFile(entrypoint, ENTRYPOINT);
    await chmod(entrypoint, 0o755);
    log(`docker import ${image}`);
    await importRoot(
      root,
      image,
      [
        'ENTRYPOINT ["/usr/local/bin/adsmcp-kafka-entrypoint"]',
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        'ENV LANG=C.UTF-8',
      ],
      logFile,
    );
    await removeTree(root, logFile);
    return true;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

export interface KafkaContainer {
  /** `127.0.0.1:<port>`, as `KAFKA_BROKERS` takes it. */
  readonly brokers: string;
  readonly id: string;
  /** Stops the broker (SIGTERM: a controlled shutdown) and removes the container. */
  stop(): Promise<void>;
}

/**
 * Starts the broker in a container; resolves once it has logged that its server started, and
 * rejects with the end of what the container printed when it ends first. `environment` is given
 * to the entrypoint beside the ports (the settings it reads: docs/testing.md).
 */
export async function startKafkaContainer(
  opts: { environment?: Record<string, string> } = {},
): Promise<KafkaContainer> {
  let runtime: Awaited<ReturnType<typeof getContainerRuntimeClient>>;
  try {
    runtime = await getContainerRuntimeClient();
  } catch (err) {
    throw new Error(
      `no Docker engine answers (${err instanceof Error ? err.message : String(err)}): the Kafka container ` +
        'test needs one (npm test starts dockerd as root; see docs/testing.md)',
    );
  }
  const image = await localKafkaImage();
  if (!(await runtime.image.exists(ImageName.fromString(image)))) {
    throw new Error(`the image ${image} is not built: npm test builds it (see docs/testing.md)`);
  }
  const [port, controllerPort] = (await freePorts(2)) as [number, number];
  // The container's last output, kept to name why it did not start: Testcontainers' own error says
  // only that the log ended, and the container is removed with what it printed.
  let output = '';
  let outputEnded: Promise<void> = Promise.resolve();
  let started: StartedTestContainer;
  try {
    started = await new GenericContainer(image)
      .withNetworkMode('host')
      .withEnvironment({
        ...opts.environment,
        KAFKA_PORT: String(port),
        KAFKA_CONTROLLER_PORT: String(controllerPort),
      })
      .withLogConsumer((stream) => {
        outputEnded = new Promise((resolve) => {
          stream.on('data', (chunk: Buffer | string) => {
            output = (output + chunk.toString()).slice(-4000);
          });
          stream.once('end', resolve);
          stream.once('error', () => resolve());
        });
      })
      .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
      .withStartupTimeout(120_000)
      .start();
  } catch (err) {
    await Promise.race([outputEnded, sleep(2000)]);
    throw new Error(
      `the Kafka container did not start (${err instanceof Error ? err.message : String(err)}); ` +
        `the end of its output:\n${output.trimEnd() || '(nothing)'}`,
      { cause: err },
    );
  }
  return {
    brokers: `127.0.0.1:${port}`,
    id: started.getId(),
    async stop() {
      await started.stop({ remove: true, removeVolumes: true, timeout: 30_000 });
    },
  };
}
