/**
 * The credentials this gateway replica has recently found valid, by token hash. A known token is
 * admitted past the failed-authentication budget of its address (it is not a guess), and while
 * its entry is fresh it is admitted without a database lookup. Any change to a workspace's
 * credentials, users or features, made by any process, is announced by the database (see
 * identity-listener.ts) and forgets the workspace's entries at once; while that announcement
 * cannot be heard, no entry is fresh, and every request asks the database.
 */
import type { Caller } from '../catalogue/catalogue.ts';

interface Entry {
  caller: Caller;
  /** When the database last confirmed the credential (ms since the epoch). */
  verifiedAt: number;
}

export interface KnownCredential {
  caller: Caller;
  /** Whether the entry may be used without asking the database again. */
  fresh: boolean;
}

export class KnownCredentials {
  // A Map keeps insertion order: re-inserting on use makes the first key the least recently used.
  readonly #byHash = new Map<string, Entry>();
  /** Whether changes made elsewhere are being heard (identity-listener.ts); entries are fresh only then. */
  #heard = false;

  constructor(
    private readonly freshMs: number,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = () => Date.now(),
  ) {}

  get(tokenHash: Buffer): KnownCredential | undefined {
    const key = tokenHash.toString('base64');
    const entry = this.#byHash.get(key);
    if (entry === undefined) return undefined;
    this.#byHash.delete(key);
    this.#byHash.set(key, entry);
    return { caller: entry.caller, fresh: this.#heard && this.now() - entry.verifiedAt < this.freshMs };
  }

  remember(tokenHash: Buffer, caller: Caller): void {
    const key = tokenHash.toString('base64');
    this.#byHash.delete(key);
    this.#byHash.set(key, { caller, verifiedAt: this.now() });
    if (this.#byHash.size > this.maxEntries) {
      const oldest = this.#byHash.keys().next().value;
      if (oldest !== undefined) this.#byHash.delete(oldest);
    }
  }

  forgetToken(tokenHash: Buffer): void {
    this.#byHash.delete(tokenHash.toString('base64'));
  }

  /** Forgets every entry of a workspace: something about who may do what in it changed. */
  forgetWorkspace(workspaceId: string): void {
    for (const [key, entry] of this.#byHash) {
      if (entry.caller.principal.workspaceId === workspaceId) this.#byHash.delete(key);
    }
  }

  /**
   * Whether changes made elsewhere are heard. Losing them forgets everything, since a change may
   * have been missed; entries are fresh again only once they are heard.
   */
  setHeard(heard: boolean): void {
    if (!heard) this.#byHash.clear();
    this.#heard = heard;
  }

  /** Forgets every token of a credential: called when it is revoked through this replica. */
  forgetCredential(credentialId: string): void {
    for (const [key, entry] of this.#byHash) {
      if (entry.caller.principal.credentialId === credentialId) this.#byHash.delete(key);
    }
  }
}
