/**
 * A stand-in ad platform for tests: a real HTTP server on an ephemeral port that records every
 * request it receives and answers each with the test's handler.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  /** The path without the query. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The body as UTF-8 text. */
  body: string;
  /** The body's bytes as received (a file upload's). */
  bytes: Buffer;
}

/** Answers the `n`th request (1-based) the platform received. */
export type Answer = (req: SeenRequest, res: ServerResponse, n: number) => void;

export interface FakePlatform {
  url: string;
  /** Every request received, in order. */
  seen: SeenRequest[];
  /** Replaces the handler for the requests that follow. */
  answer(handler: Answer): void;
  close(): Promise<void>;
}

/** json answers with `body` as JSON and `status`, plus any `headers`. */
export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Answer {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
}

/** startFakePlatform starts a platform answering `handler` (200 `{}` by default). */
export async function startFakePlatform(handler: Answer = json({})): Promise<FakePlatform> {
  const seen: SeenRequest[] = [];
  let current = handler;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://platform');
      const bytes = Buffer.concat(chunks);
      const request: SeenRequest = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: bytes.toString('utf8'),
        bytes,
      };
      seen.push(request);
      current(request, res, seen.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    answer(next) {
      current = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
