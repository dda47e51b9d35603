/**
 * GET /assets/{asset_id}?token=…: serves a campaign asset's image to whoever holds a delivery link
 * (a person reviewing it in the dashboard, an upload page). The token is checked first (no
 * service is asked for a forged or expired one); then the marketing service is asked for the
 * image on every request, and it refuses an archived asset, so archiving revokes links at once.
 */
import { AssetService, type GetCampaignAssetContentResponse } from '@adsmcp/proto/marketing/v1/assets_pb';
import { isUuid } from '@adsmcp/runtime/ids';
import type { Principal } from '@adsmcp/runtime/principal';
import { Code, ConnectError } from '@connectrpc/connect';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import type { AssetLinks } from './asset-links.ts';

/** The path prefix of delivery links. */
export const ASSET_PATH = '/assets/';

/** The URL as it may be logged: a delivery link's token is a credential and stays out of logs. */
export function loggableUrl(url: string): string {
  return url.startsWith(ASSET_PATH) ? url.replace(/\?.*$/, '?token=…') : url;
}

/** Who a delivery is made for: the workspace the link names, reading only. */
function linkPrincipal(workspaceId: string, assetId: string): Principal {
  return {
    workspaceId,
    credentialId: `asset-link:${assetId}`,
    userId: null,
    role: 'viewer',
    scopes: ['read'],
    via: 'dashboard',
  };
}

/** Headers of every answer of the route: nothing in it is a page or a script, or cached. */
function lockedDown(reply: FastifyReply): FastifyReply {
  return (
    reply
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'; frame-ancestors 'none'")
      .header('cross-origin-resource-policy', 'same-origin')
      .header('referrer-policy', 'no-referrer')
      // The link may be revoked (archived) at any moment: no copy may outlive the server's say.
      .header('cache-control', 'private, no-store')
  );
}

const refuse = (reply: FastifyReply, status: number, error: string, message: string) =>
  lockedDown(reply).code(status).send({ error, message });

const EXTENSION: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg' };

/** registerAssetRoute adds the delivery route, which checks links with `links`. */
export function registerAssetRoute(app: FastifyInstance, deps: GatewayDeps, links: AssetLinks): void {
  app.get<{ Params: { assetId: string }; Querystring: { token?: unknown } }>(
    `${ASSET_PATH}:assetId`,
    async (req, reply) => {
      const assetId = req.params.assetId.toLowerCase();
      if (!isUuid(assetId)) return refuse(reply, 404, 'not_found', 'no such asset');
      const token = typeof req.query.token === 'string' ? req.query.token : '';
      const link = links.check(assetId, token);
      if (!link.ok) {
        return link.reason === 'expired'
          ? refuse(reply, 403, 'link_expired', 'this delivery link has expired; ask for a new one')
          : refuse(reply, 403, 'link_invalid', 'this delivery link is not valid');
      }
      let res: GetCampaignAssetContentResponse;
      try {
        res = await deps
          .clientOf(AssetService)
          .getCampaignAssetContent({ assetId }, onBehalfOf(linkPrincipal(link.workspaceId, assetId)));
      } catch (err) {
        const code = ConnectError.from(err).code;
        if (code === Code.NotFound) return refuse(reply, 404, 'not_found', 'no such asset');
        if (code === Code.FailedPrecondition) {
          return refuse(reply, 410, 'archived', 'this asset is archived; its delivery links no longer work');
        }
        throw err;
      }
      const type = res.asset?.mimeType ?? 'application/octet-stream';
      return lockedDown(reply)
        .type(type)
        .header('content-disposition', `inline; filename="${assetId}.${EXTENSION[type] ?? 'bin'}"`)
        .send(Buffer.from(res.content));
    },
  );
}
