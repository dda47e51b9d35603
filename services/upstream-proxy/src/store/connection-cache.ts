/**
 * The connections a replica has read for platform calls, each with its credential already opened,
 * reused for as long as no connection has changed.
 *
 * Every call still asks the database one question before it uses a held connection: the count of
 * changes made to connections (`connection_changes`, moved by a trigger in the transaction of every
 * update or delete). That read is sent after the call arrived, so a change committed before a call
 * reached any replica is always seen by it: the replaced or removed credential is not used. The
 * calls that arrive together share one such read, and one is on its way at a time, so under load
 * it costs a fraction of a read per call, where reading the row and opening its credential cost
 * one read of the row and one AES-GCM decryption per call.
 *
 * Written here rather than with a cache library: what decides whether an entry may be used is the
 * change count read for the call, which no cache's own expiry knows; the bound on entries and on
 * their age is a few lines over a Map's insertion order.
 */
import type { Pool } from '@adsmcp/runtime/db';
import type { Connection } from '../domain/connection.ts';
import type { CredentialCipher } from '../domain/credential-cipher.ts';
import { getConnectionWithCredential } from './connection-store.ts';

/** How many connections a replica holds at most; the oldest read goes first. */
export const DEFAULT_MAX_CONNECTIONS = 10_000;
/** How long an opened credential stays in memory at most, changed or not. */
export const DEFAULT_MAX_AGE_MS = 5 * 60_000;

export interface OpenedConnection {
  connection: Connection;
  /** The platform credential, opened. */
  credential: string;
}

export interface ConnectionCacheOptions {
  pool: Pool;
  cipher: CredentialCipher;
  maxConnections?: number;
  maxAgeMs?: number;
  /** For tests: the clock, in milliseconds. */
  now?: () => number;
}

export interface ConnectionCache {
  /**
   * The workspace's connection `accountId` with its credential opened, as the database holds it
   * now, or undefined when the workspace has no connection by that id.
   */
  get(workspaceId: string, accountId: string): Promise<OpenedConnection | undefined>;
}

interface Entry extends OpenedConnection {
  /** The change count read before the row was. */
  version: bigint;
  readAt: number;
}

/** The count of changes made to connections so far. */
async function readChangeCount(pool: Pool): Promise<bigint> {
  // Named, so each connection plans it once: every wave of calls runs it.
  const { rows } = await pool.query<{ version: string }>({
    name: 'upstream-connection-changes',
    text: 'SELECT version FROM connection_changes',
  });
  const version = rows[0]?.version;
  if (version === undefined)
    throw new Error('connection_changes has no row: the migrations were not applied');
  return BigInt(version);
}

/** createConnectionCache returns an empty cache over `opts.pool`. */
export function createConnectionCache(opts: ConnectionCacheOptions): ConnectionCache {
  const { pool, cipher } = opts;
  const maxConnections = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const maxAgeMs = opts.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  const now = opts.now ?? Date.now;
  const entries = new Map<string, Entry>();
  /** The highest change count seen: entries read before it are dropped. */
  let latest = -1n;
  /** The change count read not yet sent, which a call arriving now may join. */
  let unsent: Promise<bigint> | undefined;
  /** Settles when the read on its way does; undefined when none is. */
  let onItsWay: Promise<void> | undefined;

  /**
   * A change count read sent after this call arrived: a read already on its way may predate a
   * change the caller saw. One read is on its way at a time, and the calls that arrive meanwhile
   * share the next one, sent when it returns: under load a read serves every call of a round trip.
   */
  function changeCount(): Promise<bigint> {
    if (unsent !== undefined) return unsent;
    const previous = onItsWay ?? Promise.resolve();
    const next = new Promise<bigint>((resolve, reject) => {
      const send = () => {
        unsent = undefined;
        const read = readChangeCount(pool);
        const settled = read.then(
          () => undefined,
          () => undefined,
        );
        onItsWay = settled;
        void settled.then(() => {
          if (onItsWay === settled) onItsWay = undefined;
        });
        read.then(resolve, reject);
      };
      // Sent once this turn of the event loop has taken in every request that came with this one.
      void previous.then(() => setImmediate(send));
    });
    unsent = next;
    return next;
  }

  function keep(accountId: string, entry: Entry): void {
    entries.delete(accountId);
    if (entries.size >= maxConnections) {
      const oldest = entries.keys().next();
      if (oldest.done !== true) entries.delete(oldest.value);
    }
    entries.set(accountId, entry);
  }

  return {
    async get(workspaceId, accountId) {
      const version = await changeCount();
      if (version > latest) {
        latest = version;
        entries.clear();
      }
      const held = entries.get(accountId);
      if (held !== undefined && held.version === version && now() - held.readAt < maxAgeMs) {
        // The account ids are unique over every workspace: held for another one, it is not this one's.
        return held.connection.workspaceId === workspaceId ? held : undefined;
      }
      const found = await getConnectionWithCredential(pool, workspaceId, accountId);
      if (found === undefined) return undefined;
      const credential = cipher.open(found.credentialCiphertext, { workspaceId, accountId });
      const entry: Entry = { connection: found.connection, credential, version, readAt: now() };
      // A read of an older count than the latest may hold a row that has changed since.
      if (version === latest) keep(accountId, entry);
      return entry;
    },
  };
}
