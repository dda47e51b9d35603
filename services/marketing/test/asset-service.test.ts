/**
 * AssetService against a real database and a real Connect server: saving from content and from
 * a source_url (a local HTTPS site reached through the safe fetcher's test options; the product's
 * fetcher refuses loopback), listing without content, archiving at a revision, and delivering
 * the stored image only while the asset is live and only to its workspace.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { AssetService, type CampaignAsset } from '@adsmcp/proto/marketing/v1/assets_pb';
import { buildConnectServer } from '@adsmcp/runtime/connect-server';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { type HttpsSite, startHttpsSite } from '@adsmcp/testkit/https-site';
import { assertRefused, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { Code } from '@connectrpc/connect';
import sharp from 'sharp';
import { createAssetHandlers } from '../src/handlers/asset-handlers.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';
import { principal } from './service.ts';

const ACCOUNT = '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90';

let svc: ServiceUnderTest<typeof AssetService>;
let site: HttpsSite;
/** The service with its fetcher pointed at `site` (the test options the product never has). */
let remote: ServiceUnderTest<typeof AssetService>;

const png = (width = 120, height = 100) =>
  sharp({ create: { width, height, channels: 3, background: '#3a7' } })
    .png()
    .toBuffer();

before(async () => {
  svc = await startServiceUnderTest({
    service: AssetService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    build: buildServer,
  });
  const image = await png(160, 90);
  site = await startHttpsSite((req, res) => {
    if (req.url === '/hero.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(image);
    } else {
      res.writeHead(404).end();
    }
  });
  const fetch = createSafeFetcher(site.fetcherOptions());
  remote = await startServiceUnderTest({
    service: AssetService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    build: (deps) =>
      buildConnectServer({
        serviceName: SERVICE_NAME,
        verifier: deps.verifier,
        logger: deps.logger,
        routes: (router) => {
          router.service(AssetService, createAssetHandlers({ pool: deps.pool, fetch }));
        },
      }),
  });
});

after(async () => {
  await remote?.stop();
  await site?.close();
  await svc?.stop();
});

async function saveUpload(who = principal(), content?: Buffer): Promise<CampaignAsset> {
  const { asset } = await svc.client.saveCampaignAsset(
    { accountId: ACCOUNT, name: 'Hero', contentBase64: content ?? (await png()) },
    svc.as(who),
  );
  assert.ok(asset);
  return asset;
}

describe('saving', () => {
  test('an upload is saved at revision 1 with its measured size, type and the sha256 of the stored bytes', async () => {
    const who = principal();
    const { asset, warnings } = await svc.client.saveCampaignAsset(
      { accountId: ACCOUNT, name: 'Hero', contentBase64: await png(120, 100), mimeType: 'image/jpeg' },
      svc.as(who),
    );
    assert.ok(asset);
    assert.equal(asset.revision, 1);
    assert.equal(asset.mimeType, 'image/png');
    assert.deepEqual([asset.width, asset.height], [120, 100]);
    assert.equal(asset.archived, false);
    assert.equal(asset.sourceUrl, undefined);
    assert.deepEqual(warnings, [
      'mime_type says image/jpeg, but the content is a PNG image; it was saved as image/png',
    ]);
    const { content } = await svc.client.getCampaignAssetContent({ assetId: asset.assetId }, svc.as(who));
    assert.equal(createHash('sha256').update(content).digest('hex'), asset.sha256);
    assert.equal(content.length, asset.byteSize);
  });

  test('an account id typed in upper case names the same account: saved so, listed by the lower-case id', async () => {
    const who = principal();
    const { asset } = await svc.client.saveCampaignAsset(
      { accountId: ACCOUNT.toUpperCase(), name: 'Upper', contentBase64: await png() },
      svc.as(who),
    );
    assert.equal(asset?.accountId, ACCOUNT);
    const { assets } = await svc.client.listCampaignAssets({ accountId: ACCOUNT }, svc.as(who));
    assert.ok(assets.some((a) => a.assetId === asset?.assetId));
    const upper = await svc.client.listCampaignAssets({ accountId: ACCOUNT.toUpperCase() }, svc.as(who));
    assert.ok(upper.assets.some((a) => a.assetId === asset?.assetId));
  });

  test('a save needs exactly one of content and source_url', async () => {
    await assertRefused(
      svc.client.saveCampaignAsset({ accountId: ACCOUNT, name: 'Hero' }, svc.as(principal())),
      Code.InvalidArgument,
      'send exactly one of content_base64 (the image) and source_url (where to fetch it)',
    );
    await assertRefused(
      svc.client.saveCampaignAsset(
        {
          accountId: ACCOUNT,
          name: 'Hero',
          contentBase64: await png(),
          sourceUrl: 'https://shop.test/a.png',
        },
        svc.as(principal()),
      ),
      Code.InvalidArgument,
      'send exactly one of content_base64 and source_url, not both',
    );
  });

  test('an image that breaks the rules is refused and nothing is stored', async () => {
    const who = principal();
    await assertRefused(
      svc.client.saveCampaignAsset(
        { accountId: ACCOUNT, name: 'Tiny', contentBase64: await png(79, 100) },
        svc.as(who),
      ),
      Code.InvalidArgument,
      /content_base64 is 79 × 100 pixels/,
    );
    const { total } = await svc.client.listCampaignAssets({ accountId: ACCOUNT }, svc.as(who));
    assert.equal(total, 0);
  });

  test('a viewer may not save', async () => {
    await assertRefused(
      svc.client.saveCampaignAsset(
        { accountId: ACCOUNT, name: 'Hero', contentBase64: await png() },
        svc.as(principal({ role: 'viewer', scopes: ['read'] })),
      ),
      Code.PermissionDenied,
      /needs the write scope/,
    );
  });
});

describe('saving from a source_url', () => {
  test('an image on a remote https site is fetched through the safe fetcher, checked and saved', async () => {
    const who = principal();
    const url = `${site.origin('shop.test')}/hero.png`;
    const { asset } = await remote.client.saveCampaignAsset(
      { accountId: ACCOUNT, name: 'Remote hero', sourceUrl: url },
      remote.as(who),
    );
    assert.ok(asset);
    assert.equal(asset.sourceUrl, url);
    assert.equal(asset.mimeType, 'image/png');
    assert.deepEqual([asset.width, asset.height], [160, 90]);
  });

  test('a remote answer other than 200 is refused with its status', async () => {
    await assertRefused(
      remote.client.saveCampaignAsset(
        { accountId: ACCOUNT, name: 'Missing', sourceUrl: `${site.origin('shop.test')}/missing.png` },
        remote.as(principal()),
      ),
      Code.InvalidArgument,
      `source_url could not be fetched: ${site.origin('shop.test')}/missing.png answered HTTP 404`,
    );
  });

  test('the product fetcher refuses a loopback source_url before connecting, with the fetcher’s reason', async () => {
    const before = site.connections();
    await assertRefused(
      svc.client.saveCampaignAsset(
        { accountId: ACCOUNT, name: 'Inside', sourceUrl: `https://127.0.0.1:${site.port}/hero.png` },
        svc.as(principal()),
      ),
      Code.InvalidArgument,
      'source_url could not be fetched: the host resolves to a loopback address (127.0.0.1)',
    );
    assert.equal(site.connections(), before);
  });
});

describe('listing, archiving and delivery', () => {
  test('the list has the workspace’s live assets of the account, newest first, without content', async () => {
    const who = principal();
    const first = await saveUpload(who);
    const second = await saveUpload(who);
    await saveUpload(principal()); // another workspace's
    const page = await svc.client.listCampaignAssets({ accountId: ACCOUNT, limit: 1 }, svc.as(who));
    assert.equal(page.total, 2);
    assert.deepEqual(
      page.assets.map((a) => a.assetId),
      [second.assetId],
    );
    assert.equal(page.nextOffset, 1);
    const rest = await svc.client.listCampaignAssets({ accountId: ACCOUNT, offset: 1 }, svc.as(who));
    assert.deepEqual(
      rest.assets.map((a) => a.assetId),
      [first.assetId],
    );
    assert.equal(rest.nextOffset, undefined);
    const other = await svc.client.listCampaignAssets(
      { accountId: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11' },
      svc.as(who),
    );
    assert.equal(other.total, 0);
  });

  test('archiving needs the current revision, and a stale one is refused naming it', async () => {
    const who = principal();
    const asset = await saveUpload(who);
    await assertRefused(
      svc.client.archiveCampaignAsset({ assetId: asset.assetId, expectedRevision: 2 }, svc.as(who)),
      Code.Aborted,
      'expected_revision is stale: the campaign asset is at revision 1; read it again and retry with expected_revision 1',
    );
    const { asset: archived } = await svc.client.archiveCampaignAsset(
      { assetId: asset.assetId, expectedRevision: 1 },
      svc.as(who),
    );
    assert.equal(archived?.archived, true);
    assert.equal(archived?.revision, 2);
    await assertRefused(
      svc.client.archiveCampaignAsset({ assetId: asset.assetId, expectedRevision: 2 }, svc.as(who)),
      Code.FailedPrecondition,
      `campaign asset ${asset.assetId} is already archived (at revision 2)`,
    );
    const { total } = await svc.client.listCampaignAssets({ accountId: ACCOUNT }, svc.as(who));
    assert.equal(total, 0);
  });

  test('the image is delivered while the asset is live, and refused from the moment it is archived', async () => {
    const who = principal();
    const asset = await saveUpload(who);
    const { content } = await svc.client.getCampaignAssetContent({ assetId: asset.assetId }, svc.as(who));
    assert.equal((await sharp(content).metadata()).format, 'png');
    await svc.client.archiveCampaignAsset({ assetId: asset.assetId, expectedRevision: 1 }, svc.as(who));
    await assertRefused(
      svc.client.getCampaignAssetContent({ assetId: asset.assetId }, svc.as(who)),
      Code.FailedPrecondition,
      `campaign asset ${asset.assetId} is archived; its delivery links no longer work`,
    );
  });

  test('another workspace cannot read, deliver or archive an asset', async () => {
    const asset = await saveUpload(principal());
    const stranger = principal();
    await assertRefused(
      svc.client.getCampaignAssetContent({ assetId: asset.assetId }, svc.as(stranger)),
      Code.NotFound,
      `campaign asset ${asset.assetId} does not exist`,
    );
    await assertRefused(
      svc.client.archiveCampaignAsset({ assetId: asset.assetId, expectedRevision: 1 }, svc.as(stranger)),
      Code.NotFound,
      `campaign asset ${asset.assetId} does not exist`,
    );
  });
});

describe('GetCampaignAssets', () => {
  test("answers the workspace's assets among the ids, archived ones marked, in the order asked, without content", async () => {
    const who = principal();
    const first = await saveUpload(who);
    const second = await saveUpload(who);
    await svc.client.archiveCampaignAsset({ assetId: second.assetId, expectedRevision: 1 }, svc.as(who));
    const theirs = await saveUpload(principal());
    const unknown = '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11';
    const { assets } = await svc.client.getCampaignAssets(
      { assetIds: [second.assetId.toUpperCase(), unknown, theirs.assetId, first.assetId] },
      svc.as(who),
    );
    assert.deepEqual(
      assets.map((a) => [a.assetId, a.archived, a.accountId, a.sha256]),
      [
        [second.assetId, true, ACCOUNT, second.sha256],
        [first.assetId, false, ACCOUNT, first.sha256],
      ],
    );
  });

  test('needs 1 to 100 ids, each a UUID, and the read scope', async () => {
    const who = principal();
    await assertRefused(
      svc.client.getCampaignAssets({ assetIds: [] }, svc.as(who)),
      Code.InvalidArgument,
      'asset_ids must have 1 to 100 ids (got 0)',
    );
    const many = Array.from({ length: 101 }, () => '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11');
    await assertRefused(
      svc.client.getCampaignAssets({ assetIds: many }, svc.as(who)),
      Code.InvalidArgument,
      'asset_ids must have 1 to 100 ids (got 101)',
    );
    await assertRefused(
      svc.client.getCampaignAssets({ assetIds: ['not-a-uuid'] }, svc.as(who)),
      Code.InvalidArgument,
      'asset_id must be a UUID (got "not-a-uuid")',
    );
    await assertRefused(
      svc.client.getCampaignAssets(
        { assetIds: ['0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11'] },
        svc.as({ ...who, scopes: [] }),
      ),
      Code.PermissionDenied,
      /read/,
    );
  });
});
