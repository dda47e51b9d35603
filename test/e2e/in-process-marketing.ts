/**
 * The marketing service run in a test's own process, on the stack's database and keys, with a
 * fetcher that reaches a local HTTPS site (the source images of ad batches): the stack's own
 * marketing process could only fetch public addresses, which tests never reach.
 */
import { openServiceDatabase } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import { createPrincipalVerifier, GATEWAY_ISSUER } from '@adsmcp/runtime/principal';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { type HttpsSite, startHttpsSite } from '@adsmcp/testkit/https-site';
import type { InProcessService } from '@adsmcp/testkit/stack';
import sharp from 'sharp';
import {
  buildServer as buildMarketing,
  SERVICE_NAME as MARKETING,
  MIGRATIONS_DIR as MARKETING_MIGRATIONS,
} from '../../services/marketing/src/server.ts';

/** startSeededStack's `inProcessMarketing`: the marketing service fetching source images from `site`. */
export function marketingFetchingFrom(site: HttpsSite) {
  return async (env: Record<string, string>): Promise<InProcessService> => {
    const logger = createLogger(MARKETING, 'silent');
    const pool = await openServiceDatabase({
      url: env.DATABASE_URL as string,
      schema: MARKETING,
      migrationsDir: MARKETING_MIGRATIONS,
      logger,
    });
    const verifier = await createPrincipalVerifier(
      {
        [GATEWAY_ISSUER]: env.PRINCIPAL_PUBLIC_KEY as string,
        'adsmcp-changes': env.CHANGES_PUBLIC_KEY as string,
      },
      MARKETING,
    );
    const server = buildMarketing({
      pool,
      verifier,
      logger,
      fetch: createSafeFetcher(site.fetcherOptions()),
    });
    const port = await server.listen(0, '127.0.0.1');
    return {
      url: `http://127.0.0.1:${port}`,
      async stop() {
        await server.close();
        await pool.end();
      },
    };
  };
}

/** An HTTPS site on `host` answering every path with a 120x100 PNG, its colour from the number in the path. */
export function startPngSite(host: string): Promise<HttpsSite> {
  return startHttpsSite(
    (req, res) => {
      const n = Number(/\/(\d+)\.png$/.exec(req.url ?? '')?.[1] ?? 0);
      void sharp({
        create: { width: 120, height: 100, channels: 3, background: { r: (n * 71) % 256, g: 40, b: 90 } },
      })
        .png()
        .toBuffer()
        .then((png) => res.writeHead(200, { 'content-type': 'image/png' }).end(png));
    },
    [host],
  );
}
