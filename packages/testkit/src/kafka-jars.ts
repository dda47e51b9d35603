/**
 * The jars of the Apache Kafka broker the tests run (kafka-broker.ts), fetched by Maven from
 * `test/kafka/pom.xml` into a cache directory kept between runs:
 * `ADSMCP_KAFKA_CACHE` (default `~/.cache/adsmcp-kafka`) / the Kafka version.
 *
 * `mvn dependency:copy-dependencies` copies into a directory of its own, renamed into place once
 * complete, so two test files fetching at once never see half a classpath, and a run killed
 * mid-fetch leaves nothing that passes for the jars. The pom's digest is kept beside them: when
 * the pom changes, the jars are fetched again.
 *
 * Run as a script (`npm test` does, in the background, when a selected file starts a broker), it
 * fetches what is missing and prints how long that took.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The pom that names the broker's artifacts. */
export const KAFKA_POM = fileURLToPath(new URL('../../../test/kafka/pom.xml', import.meta.url));

/** Written beside the jars once they are all there: the digest of the pom they came from. */
const MARKER = '.adsmcp-pom-sha256';

export interface KafkaJars {
  /** The Kafka version the pom declares. */
  version: string;
  /** The directory holding every jar. */
  dir: string;
  /** `dir/*`, as `java -cp` takes it. */
  classpath: string;
  /** Whether Maven fetched them now (false: they were in the cache). */
  fetched: boolean;
  /** How long this took. */
  ms: number;
}

async function pomFacts(): Promise<{ version: string; digest: string }> {
  const pom = await readFile(KAFKA_POM, 'utf8');
  const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1];
  if (version === undefined) throw new Error(`${KAFKA_POM} declares no <kafka.version>`);
  return { version, digest: createHash('sha256').update(pom).digest('hex') };
}

/** Where the jars of `version` are kept. */
export function kafkaJarsDir(version: string): string {
  const root = process.env.ADSMCP_KAFKA_CACHE || join(homedir(), '.cache', 'adsmcp-kafka');
  return join(root, version);
}

async function cached(dir: string, digest: string): Promise<boolean> {
  try {
    return (await readFile(join(dir, MARKER), 'utf8')).trim() === digest;
  } catch {
    return false;
  }
}

/** Runs Maven, resolving with its exit code and the end of what it printed. */
function mvn(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.MVN_PATH || 'mvn', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-6000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error(
              'Maven (mvn) is not installed: the Kafka tests fetch the broker with it (apt-get install -y maven)',
            )
          : err,
      ),
    );
    child.once('exit', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** ensureKafkaJars returns the broker's jars, fetching them with Maven when the cache lacks them. */
export async function ensureKafkaJars(): Promise<KafkaJars> {
  const started = Date.now();
  const { version, digest } = await pomFacts();
  const dir = kafkaJarsDir(version);
  const done = (fetched: boolean): KafkaJars => ({
    version,
    dir,
    classpath: join(dir, '*'),
    fetched,
    ms: Date.now() - started,
  });
  if (await cached(dir, digest)) return done(false);

  const staging = `${dir}.partial-${process.pid}-${Date.now()}`;
  await mkdir(staging, { recursive: true });
  try {
    const { code, output } = await mvn([
      '-B',
      '-q',
      '-f',
      KAFKA_POM,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${staging}`,
      '-DincludeScope=runtime',
    ]);
    if (code !== 0)
      throw new Error(`Maven could not fetch the Kafka ${version} broker (exit ${code}):\n${output}`);
    if (!(await readdir(staging)).some((f) => f.startsWith('kafka_')))
      throw new Error(`Maven fetched no kafka_*.jar into ${staging}:\n${output}`);
    await writeFile(join(staging, MARKER), `${digest}\n`);
    // Another fetch may have finished first, or an older pom's jars may be there.
    if (await cached(dir, digest)) return done(false);
    await rm(dir, { recursive: true, force: true });
    try {
      await rename(staging, dir);
    } catch (err) {
      if (!(await cached(dir, digest))) throw err;
    }
    return done(true);
  } finally {
    if (existsSync(staging)) await rm(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureKafkaJars().then(
    (jars) => {
      const took = `${(jars.ms / 1000).toFixed(1)} s`;
      process.stdout.write(
        jars.fetched
          ? `[kafka] fetched the Kafka ${jars.version} broker's jars with Maven in ${took} (${jars.dir})\n`
          : `[kafka] the Kafka ${jars.version} broker's jars are cached (${jars.dir})\n`,
      );
    },
    (err: unknown) => {
      process.stdout.write(`[kafka] ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
