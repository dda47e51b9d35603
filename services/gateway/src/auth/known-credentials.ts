/**
 * The credentials this gateway replica has recently found valid, by token hash. A known token is
 * admitted past the failed-authentication budget of its address (it is not a guess), and while
 * its entry is fresh it is admitted without a database lookup. Revocations made through this
 * replica forget the credential at once; one made elsewhere (the admin command, another replica)
 * is seen when the entry goes stale, after at most `freshMs`.
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
    return { caller: entry.caller, fresh: this.now() - entry.verifiedAt < this.freshMs };
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

  /** Forgets every token of a credential: called when it is revoked through this replica. */
  forgetCredential(credentialId: string): void {
    for (const [key, entry] of this.#byHash) {
      if (entry.caller.principal.credentialId === credentialId) this.#byHash.delete(key);
    }
  }
}
