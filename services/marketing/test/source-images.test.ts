/**
 * SaveSourceImages and FindSourceImages against a real database and the real marketing server
 * (buildServer, its fetcher pointed at a local HTTPS site through the safe fetcher's test options):
 * an ad batch's source image URLs become campaign assets, one per distinct URL, reused rather than
 * fetched again, a few fetched at a time, and one image that cannot be saved does not keep the
 * others from being saved. The site counts the requests for each path, so "not fetched again" is
 * seen, not assumed.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AssetService,
  SaveSourceImagesRequestSchema,
  type SourceImage,
} from '@adsmcp/proto/marketing/v1/assets_pb';
import { type Principal, principalKey } from '@adsmcp/runtime/principal';
import { createSafeFetcher } from '@adsmcp/runtime/safe-fetch';
import { type HttpsSite, startHttpsSite } from '@adsmcp/testkit/https-site';
import { assertRefused, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { create } from '@bufbuild/protobuf';
import { Code, createContextValues, createHandlerContext } from '@connectrpc/connect';
import sharp from 'sharp';
import { assetNameFromUrl, NOT_FETCHED } from '../src/domain/source-images.ts';
import { createAssetHandlers } from '../src/handlers/asset-handlers.ts';
import { buildServer, MIGRATIONS_DIR, SERVICE_NAME } from '../src/server.ts';
import { principal } from './service.ts';

const ACCOUNT = '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90';
const OTHER_ACCOUNT = '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11';

let svc: ServiceUnderTest<typeof AssetService>;
let site: HttpsSite;
let image: Buffer;
/** Requests the site received, by path. */
const requests = new Map<string, number>();
/** Responses to /held/… paths, waiting for the test to let them go. */
const held: { path: string; res: ServerResponse }[] = [];
/** Whether /held/… paths are answered at once (no longer held). */
let released = false;
/** Responses to /pair/… paths: each is answered once a second request for the same path arrives. */
const pairs = new Map<string, ServerResponse>();

const answerImage = (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'image/png' });
  res.end(image);
};

before(async () => {
  image = await sharp({ create: { width: 160, height: 90, channels: 3, background: '#3a7' } })
    .png()
    .toBuffer();
  site = await startHttpsSite((req, res) => {
    const path = req.url ?? '';
    requests.set(path, (requests.get(path) ?? 0) + 1);
    if (path.startsWith('/img/')) {
      answerImage(res);
    } else if (path.startsWith('/held/')) {
      if (released) answerImage(res);
      else held.push({ path, res });
    } else if (path.startsWith('/pair/')) {
      const first = pairs.get(path);
      if (first === undefined) {
        pairs.set(path, res);
      } else {
        answerImage(first);
        answerImage(res);
      }
    } else if (path.startsWith('/page/')) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>Not an image</title>');
    } else {
      res.writeHead(404).end();
    }
  });
  const fetch = createSafeFetcher(site.fetcherOptions());
  svc = await startServiceUnderTest({
    service: AssetService,
    name: SERVICE_NAME,
    migrations: MIGRATIONS_DIR,
    build: (deps) => buildServer({ ...deps, fetch }),
  });
});

after(async () => {
  released = true;
  for (const { res } of held.splice(0)) answerImage(res);
  await svc?.stop();
  await site?.close();
});

/** A new path under `prefix`, that no other test names. */
const fresh = (prefix: string, name = 'hero.png') => `/${prefix}/${randomUUID()}/${name}`;
const urlOf = (path: string) => `${site.origin('shop.test')}${path}`;
const requested = (path: string) => requests.get(path) ?? 0;

async function save(who: Principal, urls: string[], accountId = ACCOUNT): Promise<SourceImage[]> {
  const { images } = await svc.client.saveSourceImages({ accountId, sourceUrls: urls }, svc.as(who));
  return images;
}

async function find(who: Principal, urls: string[], accountId = ACCOUNT): Promise<SourceImage[]> {
  const { images } = await svc.client.findSourceImages({ accountId, sourceUrls: urls }, svc.as(who));
  return images;
}

const idOf = (i: SourceImage | undefined) => {
  assert.ok(i?.asset, `no asset for ${i?.sourceUrl}: ${i?.error}`);
  return i.asset.assetId;
};

/** Waits until `check` holds, for at most `ms`. */
async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('saving source images', () => {
  test('the first call saves one asset per distinct URL, in the order first given; a second reuses them without fetching', async () => {
    const who = principal();
    const [a, b, c] = [fresh('img', 'a.png'), fresh('img', 'b.png'), fresh('img', 'c.png')];
    const first = await save(who, [urlOf(a), urlOf(b), urlOf(a), urlOf(c), urlOf(b)]);
    assert.deepEqual(
      first.map((i) => [i.sourceUrl, i.savedNow, i.error]),
      [
        [urlOf(a), true, ''],
        [urlOf(b), true, ''],
        [urlOf(c), true, ''],
      ],
    );
    for (const i of first) {
      assert.equal(i.asset?.sourceUrl, i.sourceUrl);
      assert.equal(i.asset?.accountId, ACCOUNT);
      assert.equal(i.asset?.mimeType, 'image/png');
      assert.deepEqual([i.asset?.width, i.asset?.height], [160, 90]);
      assert.equal(i.asset?.revision, 1);
    }
    assert.deepEqual(
      first.map((i) => i.asset?.name),
      ['a.png', 'b.png', 'c.png'],
    );
    assert.deepEqual([a, b, c].map(requested), [1, 1, 1]);

    const second = await save(who, [urlOf(c), urlOf(a), urlOf(b)]);
    assert.deepEqual(
      second.map((i) => [i.sourceUrl, i.savedNow, i.error, idOf(i)]),
      [
        [urlOf(c), false, '', idOf(first[2])],
        [urlOf(a), false, '', idOf(first[0])],
        [urlOf(b), false, '', idOf(first[1])],
      ],
    );
    assert.deepEqual([a, b, c].map(requested), [1, 1, 1]);
    const { total } = await svc.client.listCampaignAssets({ accountId: ACCOUNT }, svc.as(who));
    assert.equal(total, 3);
  });

  test('an asset saved by SaveCampaignAsset from the same URL is reused', async () => {
    const who = principal();
    const path = fresh('img');
    const { asset } = await svc.client.saveCampaignAsset(
      { accountId: ACCOUNT, name: 'By hand', sourceUrl: urlOf(path) },
      svc.as(who),
    );
    const [reused] = await save(who, [urlOf(path)]);
    assert.equal(reused?.savedNow, false);
    assert.equal(idOf(reused), asset?.assetId);
    assert.equal(reused?.asset?.name, 'By hand');
    assert.equal(requested(path), 1);
  });

  test('an archived asset, another account’s and another workspace’s are not reused', async () => {
    const who = principal();
    const path = fresh('img');
    const url = urlOf(path);
    const [saved] = await save(who, [url]);
    await svc.client.archiveCampaignAsset({ assetId: idOf(saved), expectedRevision: 1 }, svc.as(who));

    const [again] = await save(who, [url]);
    assert.equal(again?.savedNow, true);
    assert.notEqual(idOf(again), idOf(saved));
    assert.equal(requested(path), 2);

    const [otherAccount] = await save(who, [url], OTHER_ACCOUNT);
    assert.equal(otherAccount?.savedNow, true);
    assert.equal(otherAccount?.asset?.accountId, OTHER_ACCOUNT);
    assert.notEqual(idOf(otherAccount), idOf(again));
    assert.equal(requested(path), 3);

    const [otherWorkspace] = await save(principal(), [url]);
    assert.equal(otherWorkspace?.savedNow, true);
    assert.notEqual(idOf(otherWorkspace), idOf(again));
    assert.equal(requested(path), 4);

    // The live one of the account is what is reused now.
    const [reused] = await save(who, [url]);
    assert.equal(reused?.savedNow, false);
    assert.equal(idOf(reused), idOf(again));
    assert.equal(requested(path), 4);
  });

  test('a URL that cannot be fetched or is no image is reported in its entry, and the others are saved', async () => {
    const who = principal();
    const [good, missing, page] = [fresh('img'), fresh('missing'), fresh('page', 'index.html')];
    const urls = [urlOf(missing), urlOf(good), urlOf(page)];
    const first = await save(who, urls);
    assert.deepEqual(
      first.map((i) => [i.sourceUrl, i.savedNow, i.asset === undefined, i.error]),
      [
        [urls[0], false, true, `source_url could not be fetched: ${urlOf(missing)} answered HTTP 404`],
        [urls[1], true, false, ''],
        [
          urls[2],
          false,
          true,
          'the image at source_url is not a PNG or JPEG image (its first bytes are neither signature); only PNG and JPEG images are accepted',
        ],
      ],
    );

    const second = await save(who, urls);
    assert.equal(second[1]?.savedNow, false);
    assert.equal(idOf(second[1]), idOf(first[1]));
    assert.deepEqual(
      second.map((i) => i.error),
      first.map((i) => i.error),
    );
    // The failed ones are tried again (they may have been fixed); the saved one is not.
    assert.deepEqual([missing, good, page].map(requested), [2, 1, 2]);
    const { total } = await svc.client.listCampaignAssets({ accountId: ACCOUNT }, svc.as(who));
    assert.equal(total, 1);
  });

  test('a long URL beyond ASCII is saved and found (more bytes than a btree entry holds)', async () => {
    const who = principal();
    // 1500 different CJK characters: 4500 bytes, and hardly compressible.
    const tail = Array.from({ length: 1500 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 20000)));
    const path = `/img/${randomUUID()}/${tail.join('')}`;
    const url = urlOf(path);
    assert.ok(Buffer.byteLength(url) > 4000);
    const [saved] = await save(who, [url]);
    assert.equal(saved?.error, '');
    assert.equal(saved?.savedNow, true);
    assert.equal(saved?.asset?.sourceUrl, url);
    const [found] = await find(who, [url]);
    assert.equal(idOf(found), idOf(saved));
  });

  test('two calls saving the same new URL at once store one asset, and both answer with it', async () => {
    const who = principal();
    // The site answers only once both calls have asked, so both fetch before either saves.
    const path = fresh('pair');
    const [one, two] = await Promise.all([save(who, [urlOf(path)]), save(who, [urlOf(path)])]);
    assert.equal(requested(path), 2);
    assert.equal(idOf(one?.[0]), idOf(two?.[0]));
    assert.deepEqual([one?.[0]?.savedNow, two?.[0]?.savedNow].sort(), [false, true]);
    const { total } = await svc.client.listCampaignAssets({ accountId: ACCOUNT }, svc.as(who));
    assert.equal(total, 1);
  });

  test('at most four images are fetched at a time', async () => {
    const who = principal();
    const paths = Array.from({ length: 9 }, (_, n) => fresh('held', `${n}.png`));
    const call = save(who, paths.map(urlOf));
    await eventually(() => held.length === 4, 'four requests held');
    await sleep(300);
    assert.equal(held.length, 4, 'no fifth request while four are in flight');
    // The first four, in the order given (they may arrive in any order).
    assert.deepEqual(held.map((h) => h.path).sort(), paths.slice(0, 4).sort());
    // Let one go: exactly one more starts.
    const first = held.shift();
    if (first) answerImage(first.res);
    await eventually(() => held.length === 4 && requested(paths[4] ?? '') === 1, 'the fifth request');
    await sleep(200);
    assert.equal(held.length, 4);
    released = true;
    for (const { res } of held.splice(0)) answerImage(res);
    const images = await call;
    released = false;
    assert.equal(images.length, 9);
    assert.ok(images.every((i) => i.savedNow && i.error === ''));
    assert.deepEqual(paths.map(requested), Array(9).fill(1));
  });

  test('once the call’s deadline passes the fetches in flight are stopped and no further image is fetched', async () => {
    const who = principal();
    const paths = Array.from({ length: 8 }, (_, n) => fresh('held', `${n}.png`));
    const refused = assertRefused(
      svc.client.saveSourceImages(
        { accountId: ACCOUNT, sourceUrls: paths.map(urlOf) },
        { ...svc.as(who), timeoutMs: 1000 },
      ),
      Code.DeadlineExceeded,
      /.*/,
    );
    await eventually(() => held.length === 4, 'four requests held');
    await refused;
    // The server's own timer and the closed stream abort the handler's signal, which stops the
    // four fetches in flight: each one's connection is closed, without waiting for an answer.
    await eventually(() => held.every(({ res }) => res.socket === null || res.socket.destroyed), 'closed');
    held.splice(0);
    // And the handler starts none of the other four.
    await sleep(300);
    assert.deepEqual(paths.map(requested), [1, 1, 1, 1, 0, 0, 0, 0]);
    const found = await find(who, paths.map(urlOf));
    assert.ok(found.every((i) => i.asset === undefined));
  });
});

test('a call cancelled before it fetched answers the URLs it did not get to with "not fetched"', async () => {
  // Through the handler itself: over the wire a cancelled call's answer reaches no one.
  const who = principal();
  const [saved, other, third] = [fresh('img'), fresh('img'), fresh('img')];
  await save(who, [urlOf(saved)]);
  const handlers = createAssetHandlers({ pool: svc.pool, fetch: createSafeFetcher(site.fetcherOptions()) });
  const ctx = createHandlerContext({
    service: AssetService,
    method: AssetService.method.saveSourceImages,
    protocolName: 'connect',
    requestMethod: 'POST',
    url: 'http://marketing.test/marketing.v1.AssetService/SaveSourceImages',
    requestSignal: AbortSignal.abort(),
    contextValues: createContextValues().set(principalKey, who),
  });
  const { images } = await handlers.saveSourceImages(
    create(SaveSourceImagesRequestSchema, {
      accountId: ACCOUNT,
      sourceUrls: [urlOf(other), urlOf(saved), urlOf(third)],
    }),
    ctx,
  );
  assert.deepEqual(
    images?.map((i) => [i.sourceUrl, i.asset !== undefined, i.savedNow, i.error]),
    [
      [urlOf(other), false, false, NOT_FETCHED],
      [urlOf(saved), true, false, ''],
      [urlOf(third), false, false, NOT_FETCHED],
    ],
  );
  assert.deepEqual([saved, other, third].map(requested), [1, 0, 0]);
});

describe('finding source images', () => {
  test('FindSourceImages gives the saved assets and none for the others, fetching nothing, with read access only', async () => {
    const who = principal();
    const [saved, unsaved] = [fresh('img'), fresh('img')];
    const [asset] = await save(who, [urlOf(saved)]);
    const reader = principal({ workspaceId: who.workspaceId, role: 'viewer', scopes: ['read'] });
    const connections = site.connections();
    const images = await find(reader, [urlOf(unsaved), urlOf(saved), urlOf(unsaved)]);
    assert.deepEqual(
      images.map((i) => [i.sourceUrl, i.asset?.assetId, i.savedNow, i.error]),
      [
        [urlOf(unsaved), undefined, false, ''],
        [urlOf(saved), idOf(asset), false, ''],
      ],
    );
    assert.equal(site.connections(), connections);
    assert.deepEqual([saved, unsaved].map(requested), [1, 0]);
    // Another account's and another workspace's are not found.
    assert.equal((await find(who, [urlOf(saved)], OTHER_ACCOUNT))[0]?.asset, undefined);
    assert.equal((await find(principal(), [urlOf(saved)]))[0]?.asset, undefined);
  });

  test('saving needs the write scope and a writer role; finding needs the read scope', async () => {
    const path = fresh('img');
    const reader = principal({ role: 'viewer', scopes: ['read'] });
    await assertRefused(
      svc.client.saveSourceImages({ accountId: ACCOUNT, sourceUrls: [urlOf(path)] }, svc.as(reader)),
      Code.PermissionDenied,
      /needs the write scope/,
    );
    await assertRefused(
      svc.client.findSourceImages(
        { accountId: ACCOUNT, sourceUrls: [urlOf(path)] },
        svc.as(principal({ scopes: [] })),
      ),
      Code.PermissionDenied,
      /needs the read scope/,
    );
    assert.equal(requested(path), 0);
  });
});

describe('the request', () => {
  const ok = 'https://img.example.com/a.png';
  const refusals: [string, { accountId?: string; sourceUrls: string[] }, string | RegExp][] = [
    ['no URLs', { sourceUrls: [] }, 'source_urls must have 1 to 100 URLs (got 0)'],
    [
      '101 URLs',
      { sourceUrls: Array.from({ length: 101 }, (_, n) => `https://img.example.com/${n}.png`) },
      'source_urls must have 1 to 100 URLs (got 101)',
    ],
    [
      'an http URL',
      { sourceUrls: [ok, 'http://img.example.com/b.png'] },
      'source_urls[1] must use https (got "http://img.example.com/b.png")',
    ],
    [
      'a URL longer than 2048 characters',
      { sourceUrls: [ok, ok, `https://img.example.com/${'a'.repeat(2025)}`] },
      /^source_urls\[2\] must be at most 2048 characters \(got 2049, starting "https:\/\/img\.example\.com\/a+…"\)$/,
    ],
    [
      'a text that is no URL',
      { sourceUrls: ['img.example.com/a.png'] },
      'source_urls[0] must be an absolute https URL (got "img.example.com/a.png")',
    ],
    [
      'an empty account_id',
      { accountId: '', sourceUrls: [ok] },
      'account_id must be 1 to 255 characters (got an empty one)',
    ],
    [
      'an account_id of 256 characters',
      { accountId: 'x'.repeat(256), sourceUrls: [ok] },
      'account_id must be 1 to 255 characters (got more than 255)',
    ],
  ];
  for (const [what, req, message] of refusals) {
    test(`${what} is refused by both calls, naming the field and the rule`, async () => {
      const request = { accountId: ACCOUNT, ...req };
      const who = principal();
      await assertRefused(svc.client.saveSourceImages(request, svc.as(who)), Code.InvalidArgument, message);
      await assertRefused(svc.client.findSourceImages(request, svc.as(who)), Code.InvalidArgument, message);
    });
  }

  test('a URL of exactly 2048 characters is accepted (and fails only at the fetch)', async () => {
    const url = `https://img.example.com/${'a'.repeat(2024)}`;
    assert.equal(url.length, 2048);
    const [entry] = await save(principal(), [url]);
    assert.match(entry?.error ?? '', /^source_url could not be fetched: /);
  });
});

describe('the name of an asset saved from a URL', () => {
  const cases: [string, string][] = [
    ['https://img.example.com/winter/spring%20hero.png', 'spring hero.png'],
    ['https://img.example.com/winter/hero.png?size=large#top', 'hero.png'],
    ['https://img.example.com/winter/', 'winter'],
    ['https://img.example.com/', 'img.example.com'],
    ['https://img.example.com:8443//', 'img.example.com'],
    ['https://img.example.com/caf%C3%A9.png', 'café.png'],
    ['https://img.example.com/100%25.png', '100%.png'],
    ['https://img.example.com/bad%E0%A4%A.png', 'bad%E0%A4%A.png'],
    ['https://img.example.com/line%0Abreak.png', 'line%0Abreak.png'],
    ['https://img.example.com/a/%20/', 'a'],
  ];
  for (const [url, name] of cases) {
    test(`${url} is named ${JSON.stringify(name)}`, () => {
      assert.equal(assetNameFromUrl(url), name);
    });
  }

  test('a name longer than 200 characters is cut to 200, ending in …, never inside a character', () => {
    const long = assetNameFromUrl(`https://img.example.com/${'😀'.repeat(300)}.png`);
    assert.equal([...long].length, 200);
    assert.equal(long, `${'😀'.repeat(199)}…`);
  });

  test('a saved asset carries the name, and a long one fits the table', async () => {
    const path = `/img/${randomUUID()}/winter/${'spring%20'.repeat(40)}hero.png`;
    const [entry] = await save(principal(), [urlOf(path)]);
    assert.equal(entry?.error, '');
    assert.equal(entry?.asset?.name, `${'spring '.repeat(28)}spr…`);
    const [simple] = await save(principal(), [urlOf(`/img/${randomUUID()}/spring%20hero.png`)]);
    assert.equal(simple?.asset?.name, 'spring hero.png');
  });
});
