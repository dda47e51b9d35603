/**
 * PostgreSQL in a Docker container through Testcontainers, for the suites and fault tests that
 * need a server they can restart or freeze (docker restart, docker pause).
 *
 * The image is `ADSMCP_PG_IMAGE`, by default `adsmcp/postgres-debian:15`: built on this machine
 * from Debian's packages by `ensureLocalPgImage` (no image registry is reachable here). Where a
 * registry is reachable, `ADSMCP_PG_IMAGE=postgres:15` runs the official image instead: both
 * take the same POSTGRES_* variables and the same `-c name=value` arguments.
 *
 * The container shares the host's network namespace and PostgreSQL listens on 127.0.0.1 at a
 * port chosen here: a restart keeps the port (a published port may move when Docker restarts a
 * container), and no traffic leaves the loopback interface.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  GenericContainer,
  getContainerRuntimeClient,
  ImageName,
  type StartedTestContainer,
  Wait,
} from 'testcontainers';
import { debootstrap, imageExists, importRoot, removeTree } from './docker.ts';
import { freePort } from './free-port.ts';

/** The image built here from Debian's packages. */
export const LOCAL_PG_IMAGE = 'adsmcp/postgres-debian:15';

/** The image the containers run: `ADSMCP_PG_IMAGE`, else the local one. */
export function pgImage(): string {
  return process.env.ADSMCP_PG_IMAGE || LOCAL_PG_IMAGE;
}

// The reaper (ryuk) is an image from a registry, which cannot be pulled here; every container
// started here is stopped and removed by its owner instead.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';

const USER = 'postgres';
const PASSWORD = 'adsmcp-test';

export interface PgContainer {
  /** Admin URL (database `postgres`) on 127.0.0.1. */
  readonly adminUrl: string;
  /** The port PostgreSQL listens on, on 127.0.0.1. */
  readonly port: number;
  readonly id: string;
  /**
   * Restarts the container with no grace period (docker restart -t 0: SIGTERM, then SIGKILL at
   * once), so PostgreSQL gets no clean shutdown; resolves once it accepts connections again.
   */
  restart(): Promise<void>;
  /** Freezes every process of the container (docker pause): connections hang, none is refused. */
  pause(): Promise<void>;
  unpause(): Promise<void>;
  /** Stops and removes the container. */
  stop(): Promise<void>;
}

/** Says why no container can be started, naming what to do; never a silent skip. */
async function runtimeOrExplain(): Promise<Awaited<ReturnType<typeof getContainerRuntimeClient>>> {
  try {
    return await getContainerRuntimeClient();
  } catch (err) {
    throw new Error(
      `no Docker engine answers (${err instanceof Error ? err.message : String(err)}): the container ` +
        'tests need one (npm test starts dockerd as root; see docs/testing.md)',
    );
  }
}

/** Waits until a client can run a query over TCP, as the services will connect. */
async function acceptsConnections(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await c.connect();
      await c.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`PostgreSQL in the container never answered: ${String(err)}`);
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      await c.end().catch(() => undefined);
    }
  }
}

/** Starts PostgreSQL in a container and waits until it accepts connections on 127.0.0.1. */
export async function startPgContainer(): Promise<PgContainer> {
  const runtime = await runtimeOrExplain();
  const image = pgImage();
  if (image === LOCAL_PG_IMAGE && !(await runtime.image.exists(ImageName.fromString(image)))) {
    throw new Error(`the image ${image} is not built: npm test builds it (see docs/testing.md)`);
  }
  const port = await freePort();
  const started: StartedTestContainer = await new GenericContainer(image)
    .withNetworkMode('host')
    .withEnvironment({ POSTGRES_USER: USER, POSTGRES_PASSWORD: PASSWORD })
    .withCommand(['-c', `port=${port}`, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'])
    .withWaitStrategy(Wait.forSuccessfulCommand(`pg_isready -h 127.0.0.1 -p ${port} -U ${USER}`))
    .withStartupTimeout(120_000)
    .start();
  const adminUrl = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  try {
    await acceptsConnections(adminUrl);
  } catch (err) {
    await started.stop({ remove: true, removeVolumes: true, timeout: 0 });
    throw err;
  }
  const container = runtime.container.getById(started.getId());
  return {
    adminUrl,
    port,
    id: started.getId(),
    async restart() {
      await started.restart({ timeout: 0 });
      await acceptsConnections(adminUrl);
    },
    async pause() {
      await container.pause();
    },
    async unpause() {
      await container.unpause();
    },
    async stop() {
      const state = await container.inspect().catch(() => undefined);
      if (state?.State.Paused) await container.unpause();
      await started.stop({ remove: true, removeVolumes: true, timeout: 0 });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The local image, built from Debian's packages.

/**
 * Initialises a cluster on the first start and runs PostgreSQL in the foreground. Its arguments
 * go to postgres, as the official image's do. SIGTERM (docker stop) becomes a fast shutdown, as
 * the official image's stop signal is.
 */
const ENTRYPOINT = `#!/bin/sh
set -eu
PGDATA="\${PGDATA:-/var/lib/postgresql/data}"
BIN=/usr/lib/postgresql/15/bin
AS_PG="setpriv --reuid=postgres --regid=postgres --init-groups"
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s\\n' "\${POSTGRES_PASSWORD:-postgres}" > "$pw"
  chown postgres "$pw"
  $AS_PG "$BIN/initdb" -D "$PGDATA" -U "\${POSTGRES_USER:-postgres}" --pwfile="$pw" \\
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
fi
$AS_PG "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' "$@" &
pid=$!
trap 'kill -INT "$pid"' TERM INT
wait "$pid" || true
wait "$pid"
`;

/**
 * Builds LOCAL_PG_IMAGE unless it exists: debootstrap a minimal bookworm with postgresql-15 from
 * the configured mirror (through the shared package cache, see docker.ts), add the entrypoint,
 * `docker import` the tree. Needs root, debootstrap and a running engine. Returns whether it built.
 */
export async function ensureLocalPgImage(log: (line: string) => void = () => undefined): Promise<boolean> {
  if (await imageExists(LOCAL_PG_IMAGE)) return false;
  const root = await mkdtemp(join(tmpdir(), 'adsmcp-pg-rootfs-'));
  const logFile = `${root}.log`;
  try {
    log(`debootstrap bookworm with postgresql-15 into ${root} (log ${logFile})`);
    await debootstrap(root, ['postgresql-15'], logFile);
    const entrypoint = join(root, 'usr/local/bin/adsmcp-pg-entrypoint');
    await writeFile(entrypoint, ENTRYPOINT);
    await chmod(entrypoint, 0o755);
    // The package's own cluster is not used.
    await rm(join(root, 'var/lib/postgresql/15'), { recursive: true, force: true });
    log(`docker import ${LOCAL_PG_IMAGE}`);
    await importRoot(
      root,
      LOCAL_PG_IMAGE,
      [
        'ENTRYPOINT ["/usr/local/bin/adsmcp-pg-entrypoint"]',
        'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
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
