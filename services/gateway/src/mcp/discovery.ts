/**
 * What `server/discover` says, and the caching hints of every cacheable result (2026-07-28): the
 * values are what is true of this server, not the SDK's defaults.
 */
import type { CacheHint, DiscoverResult, Server } from '@modelcontextprotocol/server';
import { SUPPORTED_VERSIONS } from './rpc-messages.ts';

/**
 * How long a result may be used again, by what it depends on:
 * - the server's own make-up (discovery, the prompts and templates it serves, the catalogue) is
 *   the same for every caller and changes only with a new release: public, 5 minutes, as
 *   `/catalogue.json` says with `Cache-Control: public, max-age=300`;
 * - `tools/list` is shown to a credential of one workspace, whose features an administrator can
 *   turn on or off at any moment (the tools work, or answer `feature_disabled`, from the next
 *   call): private, 30 seconds;
 * - lists of the workspace's records (reports, assets, changes awaiting approval) change whenever
 *   anyone in the workspace saves one: private, not to be reused (0);
 * - a record that never changes once written (a report, the review text of a change, an image
 *   asset's bytes) is private and may be kept a day; archiving an asset makes a new read fail,
 *   a kept copy is still the image the workspace saved.
 */
export const CACHE = {
  release: { ttlMs: 300_000, cacheScope: 'public' },
  toolList: { ttlMs: 30_000, cacheScope: 'private' },
  workspaceList: { ttlMs: 0, cacheScope: 'private' },
  finished: { ttlMs: 86_400_000, cacheScope: 'private' },
  live: { ttlMs: 0, cacheScope: 'private' },
} as const satisfies Record<string, Required<CacheHint>>;

/**
 * Answers `server/discover` with every protocol version this endpoint serves: the SDK's own answer
 * lists only the 2026-era ones, although the same endpoint serves the 2025-era revisions (their
 * clients negotiate with `initialize`), and the unsupported-version error lists them all.
 */
export function discoverEveryVersion(server: Server, instructions: string): void {
  const install = server.setRequestHandler.bind(server);
  const discover = (): DiscoverResult => ({
    supportedVersions: [...SUPPORTED_VERSIONS],
    capabilities: server.getCapabilities(),
    instructions,
    ...CACHE.release,
  });
  // The SDK installs its own handler after the factory returns, on every modern exchange; this
  // instance keeps ours in its place.
  server.setRequestHandler = ((method: string, handler: unknown) =>
    method === 'server/discover'
      ? install('server/discover', discover)
      : (install as (m: string, h: unknown) => void)(method, handler)) as typeof server.setRequestHandler;
  install('server/discover', discover);
}
