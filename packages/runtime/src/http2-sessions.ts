/**
 * connect-node's HTTP/2 session manager, with no session able to crash the process.
 *
 * When a GOAWAY arrives on a session with no open streams (a peer replica draining on SIGTERM
 * sends one), the manager destroys the session with an error that Node emits later, as an
 * `error` event, once the socket has closed. If a call comes in before that, it sees the
 * destroyed session and reconnects, and the manager removes its listeners from the old session:
 * the late `error` event then has no listener and is an uncaught exception (connect-es issue
 * 1768, still so in connect-node 2.2.0). Here it made a gateway exit 1 during a rolling restart.
 * Each session therefore gets a listener of its own that ignores errors, as the manager's own
 * `abort()` does for the same reason: a call on the session still sees its error through its
 * stream, and the manager through its listeners while it has them.
 */
import type http2 from 'node:http2';
import { Http2SessionManager } from '@connectrpc/connect-node';

const guarded = new WeakSet<http2.ClientHttp2Session>();

function ignore(): void {
  // The error reached the calls and the manager already; see above.
}

/** An Http2SessionManager whose sessions never raise an unhandled `error` event. */
export class GuardedSessionManager extends Http2SessionManager {
  override async request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Parameters<Http2SessionManager['request']>[3],
  ): Promise<http2.ClientHttp2Stream> {
    const stream = await super.request(method, path, headers, options);
    const session = stream.session as http2.ClientHttp2Session | undefined;
    if (session !== undefined && !guarded.has(session)) {
      guarded.add(session);
      session.on('error', ignore);
    }
    return stream;
  }
}
