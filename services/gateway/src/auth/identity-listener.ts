/**
 * Hears the database announce changes to who may do what (migration 0003: a credential revoked, a
 * user's role, a workspace's features), made by any process, and forgets the remembered
 * credentials of that workspace at once. While the announcements cannot be heard (the connection
 * broke), nothing remembered is trusted without asking the database.
 */
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import type { KnownCredentials } from './known-credentials.ts';

export const IDENTITY_CHANNEL = 'gateway_identity';

export interface IdentityListener {
  stop(): Promise<void>;
}

/** listenForIdentityChanges keeps one LISTEN connection, re-established after `retryMs` when it breaks. */
export function listenForIdentityChanges(
  pool: Pool,
  known: KnownCredentials,
  logger: Logger,
  retryMs = 1000,
): IdentityListener {
  let stopped = false;
  let release: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    if (stopped) return;
    try {
      const client = await pool.connect();
      let released = false;
      const lost = (err?: Error) => {
        if (released) return;
        released = true;
        known.setHeard(false);
        client.removeAllListeners('notification');
        client.release(err ?? true);
        if (!stopped) {
          logger.warn(
            { err: err?.message },
            'identity announcements lost; asking the database on every request',
          );
          timer = setTimeout(() => void connect(), retryMs);
        }
      };
      client.on('notification', (n) => {
        if (n.channel === IDENTITY_CHANNEL && n.payload) known.forgetWorkspace(n.payload);
      });
      client.on('error', lost);
      await client.query(`LISTEN ${IDENTITY_CHANNEL}`);
      release = () => lost();
      known.setHeard(true);
    } catch (err) {
      known.setHeard(false);
      if (!stopped) timer = setTimeout(() => void connect(), retryMs);
      logger.warn({ err: (err as Error).message }, 'cannot listen for identity announcements yet');
    }
  };
  void connect();

  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      release?.();
    },
  };
}
