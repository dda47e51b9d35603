/**
 * Campaign image assets end to end: every process running, the tools called through the official
 * MCP client, the images served by the gateway's delivery links and fetched over HTTP as a browser
 * would, and an asset put on an ad by a reviewed ads_update_ad (approved in a real browser, the
 * sandbox's ledger the witness of one upload). Only refusals of source_url can be shown here (the guard refuses loopback, and tests
 * reach nothing else); the marketing service's tests fetch from a local HTTPS site.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, shownImageWidth } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import type { Browser } from 'playwright-core';
import sharp from 'sharp';
import { createAssetLinks } from '../../services/gateway/src/assets/asset-links.ts';

let e2e: SeededStack;
let stack: Stack;
let client: McpTestClient;
let otherClient: McpTestClient;
let account: string;
let browser: Browser | undefined;
const tools = toolCalls(() => client);

interface Asset {
  asset_id: string;
  account_id: string;
  name: string;
  mime_type: string;
  width: number;
  height: number;
  byte_size: number;
  sha256: string;
  source_url: string | null;
  revision: number;
  archived: boolean;
}

interface Saved {
  asset: Asset;
  warnings: string[];
  delivery_url: string;
  delivery_expires_at: string;
}

const image = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#4a8' } });
const pngBase64 = async (width = 120, height = 100) =>
  (await image(width, height).png().toBuffer()).toString('base64');

const save = async (args: Record<string, unknown> = {}) =>
  tools.ok<Saved>('ads_save_campaign_asset', {
    account_id: account,
    name: 'Spring hero',
    content_base64: await pngBase64(),
    ...args,
  });

/** Fetches a delivery link as a browser would: no credential, only the link. */
const deliver = (url: string) => fetch(url, { redirect: 'manual' });

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '1000' } });
  stack = e2e.stack;
  const account0 = e2e.seed.accounts[0];
  assert.ok(account0);
  account = account0.account_id;
  client = await connectClient('v2-2026', stack.mcpUrl, e2e.seed.token);
  otherClient = await connectClient('v1', stack.mcpUrl, (await newWorkspaceToken(stack, 'Other')).token);
});

after(async () => {
  await browser?.close();
  await client?.close();
  await otherClient?.close();
  await e2e?.stop();
});

describe('saving and listing', () => {
  test('an upload is saved from base64, and its delivery link serves the stored image with safe headers', async () => {
    const saved = await save({ name: 'Hero', mime_type: 'image/jpeg' });
    assert.equal(saved.asset.revision, 1);
    assert.equal(saved.asset.mime_type, 'image/png');
    assert.deepEqual([saved.asset.width, saved.asset.height], [120, 100]);
    assert.deepEqual(saved.warnings, [
      'mime_type says image/jpeg, but the content is a PNG image; it was saved as image/png',
    ]);
    assert.ok(saved.delivery_url.startsWith(`${stack.gatewayUrl}/assets/${saved.asset.asset_id}?token=`));
    const expiresIn = Date.parse(saved.delivery_expires_at) - Date.now();
    assert.ok(expiresIn > 8 * 60_000 && expiresIn <= 10 * 60_000, `expires in ${expiresIn} ms`);

    const res = await deliver(saved.delivery_url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.match(res.headers.get('content-security-policy') ?? '', /^default-src 'none'/);
    assert.equal(res.headers.get('cache-control'), 'private, no-store');
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(createHash('sha256').update(body).digest('hex'), saved.asset.sha256);
    assert.deepEqual(
      [(await sharp(body).metadata()).width, (await sharp(body).metadata()).height],
      [120, 100],
    );
  });

  test('an image of nearly 1 MiB goes through the whole way: saved, listed and served', async () => {
    const noisy = await sharp({
      create: {
        width: 560,
        height: 560,
        channels: 3,
        background: '#000',
        noise: { type: 'gaussian', mean: 128, sigma: 60 },
      },
    })
      .png()
      .toBuffer();
    assert.ok(noisy.length > 900_000 && noisy.length <= 1024 * 1024, `${noisy.length} bytes`);
    const saved = await save({ content_base64: noisy.toString('base64') });
    assert.deepEqual([saved.asset.width, saved.asset.height], [560, 560]);
    const body = Buffer.from(await (await deliver(saved.delivery_url)).arrayBuffer());
    assert.equal(body.length, saved.asset.byte_size);
    assert.equal(createHash('sha256').update(body).digest('hex'), saved.asset.sha256);
  });

  test('what is served is the upright image without its EXIF (GPS) metadata', async () => {
    const photo = await image(300, 100)
      .jpeg()
      .withExif({
        IFD0: { Artist: 'Photographer' },
        IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 0/1' },
      })
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const saved = await save({ content_base64: photo.toString('base64') });
    assert.deepEqual(
      [saved.asset.mime_type, saved.asset.width, saved.asset.height],
      ['image/jpeg', 100, 300],
    );
    const body = Buffer.from(await (await deliver(saved.delivery_url)).arrayBuffer());
    const meta = await sharp(body).metadata();
    assert.deepEqual(
      [meta.width, meta.height, meta.orientation, meta.exif],
      [100, 300, undefined, undefined],
    );
    assert.equal(body.includes(Buffer.from('Photographer')), false);
  });

  test('the list returns the assets without image content or delivery links', async () => {
    const saved = await save({ name: 'Listed' });
    const list = await tools.ok<{ assets: Asset[]; total: number; next_offset: number | null }>(
      'ads_list_campaign_assets',
      { account_id: account, limit: 100 },
    );
    const listed = list.assets.find((a) => a.asset_id === saved.asset.asset_id);
    assert.deepEqual(listed, saved.asset);
    for (const a of list.assets) {
      assert.deepEqual(Object.keys(a).sort(), [
        'account_id',
        'archived',
        'archived_at',
        'asset_id',
        'byte_size',
        'created_at',
        'height',
        'mime_type',
        'name',
        'revision',
        'sha256',
        'source_url',
        'updated_at',
        'width',
      ]);
    }
    const text = JSON.stringify(list);
    assert.doesNotMatch(text, /token|\/assets\/|delivery|content/i);
    // Another workspace sees none of them.
    const other = await tools.call('ads_list_campaign_assets', { account_id: account }, otherClient);
    assert.equal(other.isError, true);
  });

  test('an image that breaks the rules is refused with a message naming the field and the rule', async () => {
    const gif = (await image(100, 100).gif().toBuffer()).toString('base64');
    assert.deepEqual(
      await tools.refused('ads_save_campaign_asset', { account_id: account, name: 'G', content_base64: gif }),
      {
        code: 'invalid_argument',
        message: 'content_base64 is a GIF image; only PNG and JPEG images are accepted',
      },
    );
    const small = await tools.refused('ads_save_campaign_asset', {
      account_id: account,
      name: 'Small',
      content_base64: await pngBase64(79, 120),
    });
    assert.match(small.message, /content_base64 is 79 × 120 pixels .*each side must be 80 to 4096 pixels/);
    const notBase64 = await tools.refused('ads_save_campaign_asset', {
      account_id: account,
      name: 'Bad',
      content_base64: 'iVBORw0KGgo-_',
    });
    assert.match(notBase64.message, /`content_base64` must be standard base64/);
    const both = await tools.refused('ads_save_campaign_asset', {
      account_id: account,
      name: 'Both',
      content_base64: await pngBase64(),
      source_url: 'https://cdn.example/x.png',
    });
    assert.match(
      both.message,
      /send exactly one of `content_base64` \(the image\) and `source_url`.*got both/,
    );
  });

  test('a source_url on a loopback address is refused by the safe fetcher, in its words', async () => {
    const refused = await tools.refused('ads_save_campaign_asset', {
      account_id: account,
      name: 'Inside',
      source_url: 'https://127.0.0.1/x.png',
    });
    assert.deepEqual(refused, {
      code: 'invalid_argument',
      message: 'source_url could not be fetched: the host resolves to a loopback address (127.0.0.1)',
    });
  });
});

describe('delivery links', () => {
  test('an expired link is refused', async () => {
    const saved = await save();
    // A link the gateway's key signed an hour ago: genuine, but past its ten minutes.
    const old = createAssetLinks({
      keyMaterial: stack.secrets.principalPrivateKey,
      publicUrl: stack.gatewayUrl,
      ttlSeconds: 600,
      now: () => Date.now() - 3_600_000,
    });
    const res = await deliver(old.link(e2e.seed.workspaceId, saved.asset.asset_id).url);
    assert.equal(res.status, 403);
    assert.deepEqual(await res.json(), {
      error: 'link_expired',
      message: 'this delivery link has expired; ask for a new one',
    });
  });

  test('a tampered link is refused, and so is a link used for another asset', async () => {
    const a = await save();
    const b = await save();
    const url = new URL(a.delivery_url);
    const token = url.searchParams.get('token') ?? '';
    const [workspace, expires, sig = ''] = token.split('.');
    const tampered = [
      `${workspace}.${Number(expires) + 86_400}.${sig}`,
      `${workspace}.${expires}.${sig.slice(0, -2)}${sig.at(-2) === 'A' ? 'B' : 'A'}${sig.at(-1)}`,
      '',
    ];
    for (const t of tampered) {
      const res = await deliver(
        `${stack.gatewayUrl}/assets/${a.asset.asset_id}?token=${encodeURIComponent(t)}`,
      );
      assert.equal(res.status, 403, t);
      assert.equal(((await res.json()) as { error: string }).error, 'link_invalid');
    }
    const other = await deliver(
      `${stack.gatewayUrl}/assets/${b.asset.asset_id}?token=${encodeURIComponent(token)}`,
    );
    assert.equal(other.status, 403);
    assert.equal((await deliver(a.delivery_url)).status, 200);
  });

  test('archiving revokes the delivery link at once; a stale revision is refused naming the current one', async () => {
    const saved = await save();
    assert.equal((await deliver(saved.delivery_url)).status, 200);
    const stale = await tools.refused('ads_archive_campaign_asset', {
      asset_id: saved.asset.asset_id,
      expected_revision: 2,
    });
    assert.equal(stale.code, 'stale_revision');
    assert.match(
      stale.message,
      /the campaign asset is at revision 1; read it again and retry with expected_revision 1/,
    );
    assert.equal((await deliver(saved.delivery_url)).status, 200);

    const archived = await tools.ok<{ asset: Asset }>('ads_archive_campaign_asset', {
      asset_id: saved.asset.asset_id,
      expected_revision: 1,
    });
    assert.deepEqual([archived.asset.archived, archived.asset.revision], [true, 2]);
    const res = await deliver(saved.delivery_url);
    assert.equal(res.status, 410);
    assert.deepEqual(await res.json(), {
      error: 'archived',
      message: 'this asset is archived; its delivery links no longer work',
    });
    const list = await tools.ok<{ assets: Asset[] }>('ads_list_campaign_assets', {
      account_id: account,
      limit: 100,
    });
    assert.equal(
      list.assets.some((a) => a.asset_id === saved.asset.asset_id),
      false,
    );
  });

  test('the gateway logs a delivery without its token', async () => {
    const saved = await save();
    assert.equal((await deliver(saved.delivery_url)).status, 200);
    const token = new URL(saved.delivery_url).searchParams.get('token') ?? '';
    const logged = (l: string) => l.includes(`/assets/${saved.asset.asset_id}?token=…`);
    // The request is logged once answered, and the log reaches the test a moment later.
    for (let i = 0; i < 50 && !stack.recentOutput('gateway').some(logged); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const lines = stack.recentOutput('gateway');
    assert.ok(lines.some(logged), lines.slice(-5).join('\n'));
    assert.equal(
      lines.some((l) => l.includes(token)),
      false,
    );
  });

  test('another workspace cannot archive the asset', async () => {
    const saved = await save();
    const refused = await tools.refused(
      'ads_archive_campaign_asset',
      { asset_id: saved.asset.asset_id, expected_revision: 1 },
      otherClient,
    );
    assert.equal(refused.code, 'not_found');
    assert.equal((await deliver(saved.delivery_url)).status, 200);
  });
});

describe('in a browser', () => {
  test('a delivery link shows as an image on a dashboard page (its policy allows its own images), until archived', async () => {
    const saved = await save({ content_base64: await pngBase64(140, 90) });
    browser = await launchBrowser();
    const page = await (await browser.newContext()).newPage();
    // A dashboard page, with the dashboard's Content-Security-Policy, as the change review is.
    await page.goto(`${stack.gatewayUrl}/dashboard/login`);
    // Runs in the page (a string, since this file is not typed for the DOM): the image's width, or -1.
    const show = (src: string): Promise<number> =>
      page.evaluate(`new Promise((resolve) => {
        const img = document.createElement('img');
        img.onload = () => resolve(img.naturalWidth);
        img.onerror = () => resolve(-1);
        img.src = ${JSON.stringify(src)};
        document.body.append(img);
      })`);
    const path = saved.delivery_url.slice(stack.gatewayUrl.length);
    assert.equal(await show(path), 140);
    await tools.ok('ads_archive_campaign_asset', { asset_id: saved.asset.asset_id, expected_revision: 1 });
    // A page keeps the images it has shown in memory; the next page view asks again, and no HTTP
    // cache answers for the gateway (no-store).
    await page.reload();
    assert.equal(await show(path), -1);
  });
});

describe('on an ad (ads_update_ad)', () => {
  interface Change {
    change_id: string;
    status: string;
    digest: string;
    summary: string;
    operation: { body: { creative: Record<string, unknown> } };
    uploads: { asset_id: string; sha256: string; width: number; height: number; file_id: string | null }[];
    applied_differences: string[];
  }
  interface LiveAd {
    id: string;
    status: string;
    creative: { type: string; title: string; file_id?: string };
  }
  const chatCards = async () =>
    (await tools.ok<{ ads: LiveAd[] }>('ads_list_ads', { account_id: account, limit: 100 })).ads.filter(
      (a) => a.creative.type === 'chat_card' && a.status !== 'archived' && a.creative.file_id !== undefined,
    );
  const changesTotal = async () => (await tools.ok<{ total: number }>('ads_list_changes', {})).total;
  const upstreamAccount = () => e2e.seed.accounts[0]?.upstream_account_id ?? '';

  test('a saved asset becomes the ad’s image: pinned when prepared, shown for review, uploaded once on apply', async () => {
    const [ad] = await chatCards();
    assert.ok(ad, 'the seed has a chat card with an image');
    const saved = await save({ name: 'New hero', content_base64: await pngBase64(150, 150) });
    const assetId = saved.asset.asset_id;
    const prepared = await tools.ok<Change>('ads_update_ad', {
      account_id: account,
      ad_id: ad.id,
      body: { creative: { asset_id: assetId } },
    });
    assert.equal(prepared.status, 'prepared');
    assert.deepEqual(prepared.operation.body, { creative: { asset_id: assetId } });
    assert.ok(
      prepared.summary.endsWith(
        `: creative image file "${ad.creative.file_id}" → campaign asset "${assetId}", uploaded when the change is applied`,
      ),
      prepared.summary,
    );
    assert.deepEqual(
      prepared.uploads.map((u) => [u.asset_id, u.sha256, u.width, u.height, u.file_id]),
      [[assetId, saved.asset.sha256, 150, 150, null]],
    );
    const filesBefore = (await sandboxLedger(stack, upstreamAccount(), '/files')).length;

    // The reviewer sees the image, what was pinned of it, and the ad it goes on; then approves.
    browser ??= await launchBrowser();
    const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
      email: e2e.seed.dashboardUser,
      password: e2e.seed.dashboardPassword ?? '',
    });
    try {
      await page.goto(`${stack.gatewayUrl}/dashboard/changes/${prepared.change_id}`);
      assert.equal(await shownImageWidth(page, `#creative-preview figure[data-asset="${assetId}"] img`), 150);
      const caption = await page.locator(`#creative-preview figure[data-asset="${assetId}"]`).innerText();
      assert.match(caption, new RegExp(saved.asset.sha256));
      assert.match(caption, /uploaded to the ad platform when the change is applied/);
      assert.ok(caption.includes(`Shown on the ad titled “${ad.creative.title}”`), caption);
      await Promise.all([
        page.waitForURL(new RegExp(`/dashboard/changes/${prepared.change_id}$`)),
        page.click('#approve'),
      ]);
    } finally {
      await context.close();
    }

    const applied = await tools.ok<Change>('ads_apply_change', {
      change_id: prepared.change_id,
      digest: prepared.digest,
    });
    assert.equal(applied.status, 'applied', JSON.stringify(applied));
    assert.deepEqual(applied.applied_differences, []);
    const fileId = applied.uploads[0]?.file_id ?? '';
    assert.match(fileId, /^file_[0-9a-f]{24}$/);
    assert.notEqual(fileId, ad.creative.file_id);
    const live = await tools.ok<{ ad: LiveAd }>('ads_get_ad', { account_id: account, ad_id: ad.id });
    assert.equal(live.ad.creative.file_id, fileId);
    assert.equal(live.ad.creative.title, ad.creative.title);
    // One upload, and the update sent with the file in the asset's place.
    assert.equal((await sandboxLedger(stack, upstreamAccount(), '/files')).length, filesBefore + 1);
    const sent = await sandboxLedger(stack, upstreamAccount(), `/ads/${ad.id}`);
    assert.deepEqual(
      sent.map((e) => e.request_body),
      [{ creative: { file_id: fileId } }],
    );
  });

  test('a file_id must be a file of the ad account: one it has is prepared, another is refused by name', async () => {
    const [first, second] = (await chatCards()).filter(
      (a, i, all) => all.findIndex((b) => b.creative.file_id === a.creative.file_id) === i,
    );
    assert.ok(first && second, 'two chat cards with different images');
    const before = await changesTotal();
    const unknown = 'file_000000000000000000000000';
    const refusal = await tools.refused('ads_update_ad', {
      account_id: account,
      ad_id: first.id,
      body: { creative: { file_id: unknown } },
    });
    assert.equal(refusal.code, 'invalid_argument');
    assert.match(
      refusal.message,
      new RegExp(`\`body\\.creative\\.file_id\` ${unknown}: ad account .+ has no file`),
    );
    assert.equal(await changesTotal(), before, 'nothing was recorded');

    const prepared = await tools.ok<Change>('ads_update_ad', {
      account_id: account,
      ad_id: first.id,
      body: { creative: { file_id: second.creative.file_id } },
    });
    assert.equal(prepared.status, 'prepared');
    assert.ok(
      prepared.summary.includes(
        `creative.file_id "${first.creative.file_id}" → "${second.creative.file_id}"`,
      ),
    );
    assert.deepEqual(prepared.uploads, []);
  });

  test('an image_crop is square in pixels of the upright image: equal fractions of a wide image are refused', async () => {
    const [ad] = await chatCards();
    assert.ok(ad);
    // Stored 300 × 100 with EXIF orientation 6: 100 × 300 upright, as the crop's fractions are of it.
    const turned = await image(300, 100).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const saved = await save({ content_base64: turned.toString('base64') });
    assert.deepEqual([saved.asset.width, saved.asset.height], [100, 300]);
    const prepare = (image_crop: Record<string, number>) => ({
      account_id: account,
      ad_id: ad.id,
      body: { creative: { asset_id: saved.asset.asset_id, image_crop } },
    });

    const before = await changesTotal();
    const refusal = await tools.refused('ads_update_ad', prepare({ x: 0, y: 0, width: 0.5, height: 0.5 }));
    assert.equal(refusal.code, 'invalid_argument');
    assert.match(
      refusal.message,
      /`body.creative.image_crop` must be square in pixels: on campaign asset \S+, 100 × 300 pixels upright, it is 50 × 150 pixels/,
    );
    assert.equal(await changesTotal(), before, 'nothing was recorded');

    // All of the width, a third of the height: 100 × 100 pixels.
    const change = await tools.ok<Change>(
      'ads_update_ad',
      prepare({ x: 0, y: 0.5, width: 1, height: 1 / 3 }),
    );
    assert.equal(change.status, 'prepared');
  });

  test('an asset with a file_id, an unknown asset and another account’s asset are refused when prepared', async () => {
    const [ad] = await chatCards();
    assert.ok(ad);
    const saved = await save({ content_base64: await pngBase64(130, 130) });
    const prepare = (creative: Record<string, unknown>) =>
      tools.refused('ads_update_ad', { account_id: account, ad_id: ad.id, body: { creative } });
    const before = await changesTotal();

    const both = await prepare({ asset_id: saved.asset.asset_id, file_id: ad.creative.file_id });
    assert.equal(both.code, 'invalid_argument');
    assert.match(both.message, /names both file_id and asset_id/);

    const unknownId = '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11';
    const unknown = await prepare({ asset_id: unknownId });
    assert.match(unknown.message, new RegExp(`asset_id\` ${unknownId}: no campaign asset with this id`));

    const other = e2e.seed.accounts[1]?.account_id;
    assert.ok(other, 'the seed has a second account');
    const elsewhere = await save({ account_id: other, content_base64: await pngBase64(110, 110) });
    const refusal = await prepare({ asset_id: elsewhere.asset.asset_id });
    assert.equal(refusal.code, 'invalid_argument');
    assert.match(refusal.message, /is a campaign asset of another ad account/);

    const notUuid = await prepare({ asset_id: 'hero.png' });
    assert.equal(notUuid.code, 'invalid_argument');
    assert.match(notUuid.message, /asset_id/);
    assert.equal(await changesTotal(), before, 'nothing was recorded');
  });
});
