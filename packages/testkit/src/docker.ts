/**
 * Docker on the project's machines, where no image registry can be reached: running the docker
 * CLI without blocking the event loop, and making images from Debian's packages (debootstrap into
 * a directory, then `docker import`). pg-container.ts and images.ts build their images with it.
 *
 * Every debootstrap shares one download cache (`DEBOOTSTRAP_CACHE`), so the second image built on
 * a machine, and every rebuild, downloads nothing it already has.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * debootstrap's cache of downloaded packages, shared by every image built on this machine:
 * `ADSMCP_DEBOOTSTRAP_CACHE`, by default under /var/cache (the images need root to build anyway).
 */
export function debootstrapCache(): string {
  return process.env.ADSMCP_DEBOOTSTRAP_CACHE || '/var/cache/adsmcp-debootstrap';
}

/** The end of a log file, for an error message. */
async function tail(logFile: string, lines = 20): Promise<string> {
  return (await readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-lines).join('\n');
}

/**
 * Runs a command without blocking the event loop; its output goes to `logFile`, whose end is shown
 * when it fails.
 */
export async function run(cmd: string, args: string[], logFile: string): Promise<void> {
  const out = await open(logFile, 'a');
  try {
    const code = await new Promise<number | string>((resolve) => {
      const child = spawn(cmd, args, { stdio: ['ignore', out.fd, out.fd] });
      child.once('error', (err) => resolve(err.message));
      child.once('exit', (c, signal) => resolve(c ?? signal ?? 'killed'));
    });
    if (code !== 0) {
      throw new Error(
        `${cmd} ${args.slice(0, 3).join(' ')}… failed (${code}); the end of ${logFile}:\n${await tail(logFile)}`,
      );
    }
  } finally {
    await out.close();
  }
}

/** Runs `docker args…` and resolves with its standard output; rejects with its standard error. */
export function docker(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('docker', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve(out.trim())
        : reject(new Error(`docker ${args.slice(0, 2).join(' ')} failed (${code}): ${err.trim()}`)),
    );
  });
}

/** Whether the Docker engine has the image `tag`. */
export async function imageExists(tag: string): Promise<boolean> {
  return docker(['image', 'inspect', '--format', '{{.Id}}', tag]).then(
    () => true,
    () => false,
  );
}

/** The Debian mirror apt is configured with (deb822 sources or sources.list): never hard-coded. */
export async function aptMirror(): Promise<string> {
  const candidates: string[] = [];
  const dir = '/etc/apt/sources.list.d';
  for (const f of (await readdir(dir).catch(() => [] as string[])).sort()) {
    if (!f.endsWith('.sources')) continue;
    const text = await readFile(join(dir, f), 'utf8');
    for (const stanza of text.split(/\n\s*\n/)) {
      const field = (name: string) => stanza.match(new RegExp(`^${name}:\\s*(.+)$`, 'mi'))?.[1]?.trim() ?? '';
      if (/^\s*enabled:\s*no/im.test(stanza)) continue;
      if (field('Types').split(/\s+/).includes('deb') && field('Suites').split(/\s+/).includes('bookworm')) {
        candidates.push(...field('URIs').split(/\s+/));
      }
    }
  }
  const list = await readFile('/etc/apt/sources.list', 'utf8').catch(() => '');
  for (const line of list.split('\n')) {
    const m = line.match(/^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/);
    if (m?.[1]) candidates.push(m[1]);
  }
  const mirror = candidates.find((u) => /^https?:\/\//.test(u));
  if (!mirror) throw new Error('no Debian bookworm mirror in the apt configuration (/etc/apt/sources.list*)');
  return mirror;
}

/**
 * A minimal Debian bookworm (`--variant=minbase`: essential and required packages, apt) with
 * `include` in `root`, from the configured mirror, signatures checked as always. Downloads go
 * through the shared cache; the packages are then dropped from the tree, which is for an image.
 */
export async function debootstrap(root: string, include: string[], logFile: string): Promise<void> {
  if (!existsSync('/usr/sbin/debootstrap')) throw new Error('debootstrap is not installed');
  const cache = debootstrapCache();
  await mkdir(cache, { recursive: true });
  const args = ['--variant=minbase', `--cache-dir=${cache}`];
  if (include.length > 0) args.push(`--include=${include.join(',')}`);
  await run('debootstrap', [...args, 'bookworm', root, await aptMirror()], logFile);
  await run(
    'sh',
    ['-c', 'rm -f "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*_Packages', 'sh', root],
    logFile,
  );
}

/**
 * `docker import` of the tree in `root` as `tag`, with Dockerfile instructions (`changes`: ENV,
 * ENTRYPOINT, CMD, USER, WORKDIR) and labels.
 */
export async function importRoot(
  root: string,
  tag: string,
  changes: string[],
  logFile: string,
): Promise<void> {
  const flags = changes.map((c) => `--change ${shellQuote(c)}`).join(' ');
  await run(
    'bash',
    ['-c', `set -eo pipefail; tar -C "$1" -c . | docker import ${flags} - "$2"`, 'bash', root, tag],
    logFile,
  );
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Removes a directory tree made for an image, and its log unless the build failed. */
export async function removeTree(root: string, logFile?: string): Promise<void> {
  await rm(root, { recursive: true, force: true });
  if (logFile) await rm(logFile, { force: true });
}
