/**
 * How the gateway stops on SIGTERM without resetting a connection that was on its way to it.
 *
 * Closing a listening socket resets every connection still in its accept queue: the client
 * connected and sent its request, the process never read it, and the client sees ECONNRESET
 * without knowing whether anything ran. A balancer stops sending to a stopping replica (in
 * Kubernetes, the pod's endpoint is removed as SIGTERM is sent), but connections it opened just
 * before are still arriving. So the gateway first goes on serving for `SHUTDOWN_DELAY_MS`:
 * `/readyz` says it is stopping, and every answer carries `Connection: close`, so kept-alive
 * clients reconnect elsewhere. Only then does the app close as usual (Fastify stops listening,
 * answers 503 to anything new on an open connection, and waits for the requests under way).
 */
import type { FastifyInstance } from 'fastify';

export interface Drain {
  /** Whether the stop has begun. */
  readonly draining: boolean;
  /** Begins the stop and resolves after the delay, while the app goes on serving. */
  drain(): Promise<void>;
}

/** drainable registers the hook that closes each connection after its answer once the stop began. */
export function drainable(app: FastifyInstance, delayMs: number): Drain {
  let draining = false;
  // A callback hook, not an async one: it runs on every request, and costs no promise.
  app.addHook('onRequest', (_req, reply, done) => {
    if (draining) reply.raw.setHeader('connection', 'close');
    done();
  });
  return {
    get draining() {
      return draining;
    },
    async drain() {
      draining = true;
      await new Promise((r) => setTimeout(r, delayMs));
    },
  };
}
