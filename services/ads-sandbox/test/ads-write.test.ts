import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import type { AdJson } from '../src/ads.ts';
import type { FileJson } from '../src/files.ts';
import {
  type AdListJson,
  type ErrorJson,
  type Sandbox,
  type SandboxAccount,
  startSandbox,
} from './sandbox.ts';

let sb: Sandbox;

before(async () => {
  sb = await startSandbox();
});

after(async () => {
  await sb?.stop();
});

/** A fresh seeded account and its ads in creation order. */
async function seeded(): Promise<SandboxAccount & { ads: AdJson[] }> {
  const account = await sb.newAccount();
  const res = await sb.call<AdListJson>('GET', '/ads?limit=500', { token: account.credential });
  return { ...account, ads: res.body.data };
}

function chatCardWithFile(ads: AdJson[]): AdJson {
  const ad = ads.find((a) => a.creative.type === 'chat_card' && a.creative.file_id !== undefined);
  assert.ok(ad !== undefined, 'a seeded chat_card ad with a file');
  return ad;
}

function productAd(ads: AdJson[]): AdJson {
  const ad = ads.find((a) => a.creative.type === 'product_ad_template' && a.status === 'active');
  assert.ok(ad !== undefined, 'a seeded active product_ad_template ad');
  return ad;
}

function update<T = AdJson>(credential: string, adId: string, body: unknown, key?: string) {
  return sb.call<T>('POST', `/ads/${adId}`, {
    token: credential,
    body,
    ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
  });
}

function archiveAd<T = AdJson>(
  credential: string,
  adId: string,
  opts: { body?: unknown; key?: string } = {},
) {
  return sb.call<T>('POST', `/ads/${adId}/archive`, {
    token: credential,
    ...(opts.body === undefined ? {} : { body: opts.body }),
    ...(opts.key === undefined ? {} : { headers: { 'idempotency-key': opts.key } }),
  });
}

/** uploadImage uploads a new PNG (its bytes differ by `colour`) as the account and returns its file_id. */
async function uploadImage(credential: string, colour: number): Promise<string> {
  const png = await sharp({
    create: { width: 120, height: 120, channels: 3, background: { r: colour % 256, g: 80, b: 160 } },
  })
    .png()
    .toBuffer();
  const res = await sb.call<FileJson>('POST', '/files', {
    token: credential,
    bytes: png,
    headers: { 'content-type': 'image/png' },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.file_id;
}

async function getAd(credential: string, adId: string): Promise<AdJson> {
  const res = await sb.call<AdJson>('GET', `/ads/${adId}`, { token: credential });
  assert.equal(res.status, 200);
  return res.body;
}

describe('POST /ads/{ad_id}', () => {
  it('replaces the supplied creative fields, keeps the others and bumps the revision', async () => {
    const { credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const res = await update(credential, ad.id, {
      creative: { title: 'A brand new title', price: '9.99 EUR' },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.creative, { ...ad.creative, title: 'A brand new title', price: '9.99 EUR' });
    assert.equal(res.body.revision, 2);
    assert.equal(res.body.name, ad.name);
    assert.equal(res.body.created_at, ad.created_at);
    assert.ok(Date.parse(res.body.updated_at) > Date.parse(ad.updated_at));
    assert.deepEqual(await getAd(credential, ad.id), res.body);
  });

  it('updates name, status and landing_page_configuration, and null removes the configuration', async () => {
    const { credential, ads } = await seeded();
    const ad = ads.find((a) => a.landing_page_configuration !== null && a.status === 'active');
    assert.ok(ad !== undefined);
    const res = await update(credential, ad.id, {
      name: 'Renamed ad',
      status: 'paused',
      landing_page_configuration: null,
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.name, 'Renamed ad');
    assert.equal(res.body.status, 'paused');
    assert.equal(res.body.landing_page_configuration, null);
    assert.equal(res.body.revision, 2);

    const again = await update(credential, ad.id, {
      status: 'active',
      landing_page_configuration: { query_string_template: 'src={{ad.id}}' },
    });
    assert.deepEqual(again.body.landing_page_configuration, { query_string_template: 'src={{ad.id}}' });
    assert.equal(again.body.status, 'active');
    assert.equal(again.body.revision, 3);
  });

  it('keeps the revision when the update changes nothing', async () => {
    const { credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const res = await update(credential, ad.id, { name: ad.name, creative: { title: ad.creative.title } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, ad);
  });

  it('counts name and title lengths in characters, not UTF-16 units', async () => {
    const { credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const res = await update(credential, ad.id, { name: '🚀🚀🚀', creative: { title: '✨'.repeat(50) } });
    assert.equal(res.status, 200);
    assert.equal(res.body.name, '🚀🚀🚀');
  });

  it('lets a chat_card crop its image when it has a file, supplied or kept', async () => {
    const { credential, ads } = await seeded();
    const withFile = chatCardWithFile(ads);
    const crop = { x: 0, y: 0.25, width: 0.5, height: 0.5 };
    const kept = await update(credential, withFile.id, { creative: { image_crop: crop } });
    assert.equal(kept.status, 200);
    assert.deepEqual(kept.body.creative.image_crop, crop);
    assert.equal(kept.body.creative.file_id, withFile.creative.file_id);

    const product = productAd(ads);
    const fileId = await uploadImage(credential, 1);
    const switched = await update(credential, product.id, {
      creative: { type: 'chat_card', file_id: fileId, image_crop: crop },
    });
    assert.equal(switched.status, 200, JSON.stringify(switched.body));
    assert.deepEqual(switched.body.creative, {
      ...product.creative,
      type: 'chat_card',
      file_id: fileId,
      image_crop: crop,
    });
  });

  it('refuses an image_crop without a file_id, or on a product_ad_template, as the ad would end up', async () => {
    const { accountId, credential, ads } = await seeded();
    const product = productAd(ads);
    assert.equal(product.creative.file_id, undefined);
    const crop = { x: 0, y: 0, width: 1, height: 1 };

    const onProduct = await update<ErrorJson>(credential, product.id, {
      creative: { file_id: 'file_1', image_crop: crop },
    });
    assert.equal(onProduct.status, 400);
    assert.equal(onProduct.body.error.field, 'creative.image_crop');
    assert.match(onProduct.body.error.message, /not supported for product_ad_template/);

    const noFile = await update<ErrorJson>(credential, product.id, {
      creative: { type: 'chat_card', image_crop: crop },
    });
    assert.equal(noFile.status, 400);
    assert.equal(noFile.body.error.field, 'creative.image_crop');
    assert.match(noFile.body.error.message, /requires creative\.file_id/);

    const cropped = chatCardWithFile(ads);
    const toProduct = await update<ErrorJson>(credential, cropped.id, {
      creative: { type: 'product_ad_template', image_crop: crop },
    });
    assert.equal(toProduct.status, 400);
    assert.equal(toProduct.body.error.field, 'creative.image_crop');

    assert.deepEqual(await getAd(credential, product.id), product);
    assert.deepEqual(await sb.ledger(accountId), []);
  });

  describe('refuses an invalid update body with 400 naming the field, changing nothing', () => {
    const crop = { x: 0, y: 0, width: 1, height: 1 };
    const cases: [string, unknown, string | undefined][] = [
      ['a name shorter than 3', { name: 'ab' }, 'name'],
      ['a name longer than 1000', { name: 'n'.repeat(1001) }, 'name'],
      ['a blank name', { name: '    ' }, 'name'],
      ['a name that is not a string', { name: 42 }, 'name'],
      ['a creative that is not an object', { creative: 'card' }, 'creative'],
      ['an unknown creative type', { creative: { type: 'banner' } }, 'creative.type'],
      ['an empty title', { creative: { title: '' } }, 'creative.title'],
      ['a blank title', { creative: { title: '  \t ' } }, 'creative.title'],
      ['a title longer than 50', { creative: { title: 't'.repeat(51) } }, 'creative.title'],
      ['a creative body longer than 100', { creative: { body: 'b'.repeat(101) } }, 'creative.body'],
      ['a price longer than 100', { creative: { price: 'p'.repeat(101) } }, 'creative.price'],
      ['a price that is a number', { creative: { price: 9.99 } }, 'creative.price'],
      [
        'a target_url longer than 2048',
        { creative: { target_url: `https://x.test/${'u'.repeat(2040)}` } },
        'creative.target_url',
      ],
      ['a file_id that is not a string', { creative: { file_id: 7 } }, 'creative.file_id'],
      ['a null price', { creative: { price: null } }, 'creative.price'],
      ['an unknown creative property', { creative: { subtitle: 'x' } }, 'creative.subtitle'],
      [
        'an image_crop that is not an object',
        { creative: { file_id: 'f', image_crop: [0, 0, 1, 1] } },
        'creative.image_crop',
      ],
      [
        'an image_crop x above 1',
        { creative: { file_id: 'f', image_crop: { ...crop, x: 1.5 } } },
        'creative.image_crop.x',
      ],
      [
        'an image_crop width below 0',
        { creative: { file_id: 'f', image_crop: { ...crop, width: -0.1 } } },
        'creative.image_crop.width',
      ],
      [
        'an image_crop y as a string',
        { creative: { file_id: 'f', image_crop: { ...crop, y: '0' } } },
        'creative.image_crop.y',
      ],
      [
        'an image_crop without height',
        { creative: { file_id: 'f', image_crop: { x: 0, y: 0, width: 1 } } },
        'creative.image_crop.height',
      ],
      [
        'an unknown image_crop property',
        { creative: { file_id: 'f', image_crop: { ...crop, rotation: 90 } } },
        'creative.image_crop.rotation',
      ],
      [
        'an image_crop on a product_ad_template',
        { creative: { type: 'product_ad_template', file_id: 'f', image_crop: crop } },
        'creative.image_crop',
      ],
      ['an unknown status', { status: 'deleted' }, 'status'],
      [
        'a landing_page_configuration that is a string',
        { landing_page_configuration: 'utm=1' },
        'landing_page_configuration',
      ],
      [
        'a landing_page_configuration without query_string_template',
        { landing_page_configuration: {} },
        'landing_page_configuration.query_string_template',
      ],
      [
        'a query_string_template that is not a string',
        { landing_page_configuration: { query_string_template: 1 } },
        'landing_page_configuration.query_string_template',
      ],
      [
        'an unknown landing_page_configuration property',
        { landing_page_configuration: { query_string_template: 'a', path: '/' } },
        'landing_page_configuration.path',
      ],
      ['an unknown top-level property', { name: 'Valid name', budget: 100 }, 'budget'],
      ['a body that is an array', [{ name: 'Valid name' }], undefined],
    ];
    for (const [what, body, field] of cases) {
      it(`refuses ${what}`, async () => {
        const { accountId, credential, ads } = await seeded();
        const ad = chatCardWithFile(ads);
        const res = await update<ErrorJson>(credential, ad.id, body);
        assert.equal(res.status, 400);
        assert.equal(res.body.error.code, 'invalid_request');
        assert.equal(res.body.error.field, field);
        if (field !== undefined) assert.ok(res.body.error.message.includes(field), res.body.error.message);
        assert.deepEqual(await getAd(credential, ad.id), ad);
        assert.deepEqual(await sb.ledger(accountId), []);
      });
    }
  });

  it('refuses a body that is not JSON, or is empty, with 400', async () => {
    const { credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    for (const rawBody of ['{"name":', '']) {
      const res = await sb.call<ErrorJson>('POST', `/ads/${ad.id}`, { token: credential, rawBody });
      assert.equal(res.status, 400, JSON.stringify(rawBody));
      assert.equal(res.body.error.code, 'invalid_request');
    }
  });

  it("answers 404 for another account's ad and records nothing", async () => {
    const mine = await seeded();
    const theirs = await seeded();
    const target = theirs.ads[0];
    assert.ok(target !== undefined);
    const res = await update<ErrorJson>(mine.credential, target.id, { name: 'Hijacked' });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'not_found');
    assert.deepEqual(await getAd(theirs.credential, target.id), target);
    assert.deepEqual(await sb.ledger(mine.accountId), []);
  });

  it('records every applied update in the ledger, with a null key when none was sent', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const first = await update(credential, ad.id, { name: 'First name' });
    const second = await update(credential, ad.id, { name: 'Second name' });
    const entries = await sb.ledger(accountId, `/ads/${ad.id}`);
    assert.deepEqual(
      entries.map((e) => [
        e.method,
        e.path,
        e.idempotency_key,
        e.request_body,
        e.response_status,
        e.response_body,
      ]),
      [
        ['POST', `/ads/${ad.id}`, null, { name: 'First name' }, 200, first.body],
        ['POST', `/ads/${ad.id}`, null, { name: 'Second name' }, 200, second.body],
      ],
    );
    assert.equal(second.body.revision, 3);
  });
});

describe('creative.file_id on POST /ads/{ad_id}', () => {
  const unknown = 'file_000000000000000000000000';

  it('refuses a file_id that is no file of the account with 400 naming it, changing nothing', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const res = await update<ErrorJson>(credential, ad.id, {
      name: 'Never applied',
      creative: { file_id: unknown },
    });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.error, {
      code: 'invalid_request',
      message: `creative.file_id ${unknown} is not a file of this account: upload the image with POST /files and use the file_id it answers`,
      field: 'creative.file_id',
    });
    assert.deepEqual(await getAd(credential, ad.id), ad);
    assert.deepEqual(await sb.ledger(accountId), []);
  });

  it("refuses another account's file", async () => {
    const mine = await seeded();
    const theirs = await seeded();
    const ad = chatCardWithFile(mine.ads);
    for (const fileId of [
      await uploadImage(theirs.credential, 2),
      chatCardWithFile(theirs.ads).creative.file_id,
    ]) {
      const res = await update<ErrorJson>(mine.credential, ad.id, { creative: { file_id: fileId } });
      assert.equal(res.status, 400, String(fileId));
      assert.equal(res.body.error.field, 'creative.file_id');
    }
    assert.deepEqual(await getAd(mine.credential, ad.id), ad);
  });

  it('takes a file the account uploaded, and the ad shows it', async () => {
    const { credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const fileId = await uploadImage(credential, 3);
    const res = await update(credential, ad.id, { creative: { file_id: fileId } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.creative.file_id, fileId);
    assert.equal(res.body.revision, 2);
    assert.deepEqual(await getAd(credential, ad.id), res.body);
  });

  it("takes the ad's own file_id without looking it up, even one that is no file (an older ad)", async () => {
    const { credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const same = await update(credential, ad.id, { creative: { file_id: ad.creative.file_id } });
    assert.equal(same.status, 200);
    assert.deepEqual(same.body, ad);

    await sb.pool.query(
      `UPDATE ads SET creative = jsonb_set(creative, '{file_id}', '"file_seed_01"') WHERE id = $1`,
      [ad.id],
    );
    const kept = await update(credential, ad.id, {
      creative: { title: 'Kept image', file_id: 'file_seed_01' },
    });
    assert.equal(kept.status, 200, JSON.stringify(kept.body));
    assert.deepEqual([kept.body.creative.title, kept.body.creative.file_id], ['Kept image', 'file_seed_01']);
  });

  it('does not let the refusal use up its Idempotency-Key, as any refused request', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const refused = await update<ErrorJson>(
      credential,
      ad.id,
      { creative: { file_id: unknown } },
      'key-file',
    );
    assert.equal(refused.status, 400);
    assert.deepEqual(await sb.ledger(accountId, `/ads/${ad.id}`), []);
    const again = await update<ErrorJson>(credential, ad.id, { creative: { file_id: unknown } }, 'key-file');
    assert.equal(again.status, 400);
    assert.equal(again.headers.get('idempotent-replayed'), null);

    const fileId = await uploadImage(credential, 4);
    const applied = await update(credential, ad.id, { creative: { file_id: fileId } }, 'key-file');
    assert.equal(applied.status, 200);
    assert.equal(applied.headers.get('idempotent-replayed'), null);
    assert.equal(applied.body.creative.file_id, fileId);
  });
});

describe('POST /ads/{ad_id}/archive', () => {
  it('archives the ad, and archiving it again returns it unchanged', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const res = await archiveAd(credential, ad.id);
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'archived');
    assert.equal(res.body.revision, 2);
    assert.deepEqual({ ...res.body, status: ad.status, revision: 1, updated_at: ad.updated_at }, ad);

    const again = await archiveAd(credential, ad.id, { body: {} });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, res.body);
    assert.deepEqual(await getAd(credential, ad.id), res.body);
    const entries = await sb.ledger(accountId, `/ads/${ad.id}/archive`);
    assert.equal(entries.length, 2);
    assert.deepEqual(entries[0]?.request_body, {});
  });

  it('reports an archived ad in its serving issues', async () => {
    const { credential, ads } = await seeded();
    const ad = productAd(ads);
    await archiveAd(credential, ad.id);
    const res = await sb.call<AdJson>('GET', `/ads/${ad.id}?include=serving_issues`, { token: credential });
    assert.deepEqual(res.body.serving_issues, [{ code: 'archived', message: 'The ad is archived.' }]);
  });

  it('refuses an archive body with properties', async () => {
    const { credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const res = await archiveAd<ErrorJson>(credential, ad.id, { body: { reason: 'old' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'reason');
    assert.equal((await getAd(credential, ad.id)).status, ad.status);
  });

  it('refuses to change an archived ad with 409 conflict', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const archived = (await update(credential, ad.id, { status: 'archived' })).body;
    assert.equal(archived.status, 'archived');
    for (const body of [{ status: 'active' }, { name: 'Revived' }, { status: 'archived' }, {}]) {
      const res = await update<ErrorJson>(credential, ad.id, body);
      assert.equal(res.status, 409, JSON.stringify(body));
      assert.equal(res.body.error.code, 'conflict');
      assert.match(res.body.error.message, /archived/);
    }
    assert.deepEqual(await getAd(credential, ad.id), archived);
    assert.equal((await sb.ledger(accountId)).length, 1);
  });
});

describe('Idempotency-Key on ad mutations', () => {
  it('replays the first response to a retry with the same key, marked replayed, with one ledger row', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const body = { name: 'Idempotent name', creative: { body: 'Once only' } };
    const first = await update(credential, ad.id, body, 'key-update-1');
    const retry = await update(
      credential,
      ad.id,
      { creative: { body: 'Once only' }, name: 'Idempotent name' },
      'key-update-1',
    );
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    assert.equal(first.body.revision, 2);
    assert.equal((await getAd(credential, ad.id)).revision, 2);

    const entries = await sb.ledger(accountId);
    assert.equal(entries.length, 1);
    assert.deepEqual(
      [entries[0]?.method, entries[0]?.path, entries[0]?.idempotency_key, entries[0]?.request_body],
      ['POST', `/ads/${ad.id}`, 'key-update-1', body],
    );
    assert.equal(entries[0]?.response_status, 200);
    assert.deepEqual(entries[0]?.response_body, first.body);
  });

  it('replays an archive retried with the same key, sent with no body or with {}', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = productAd(ads);
    const first = await archiveAd(credential, ad.id, { key: 'key-archive' });
    const retry = await archiveAd(credential, ad.id, { key: 'key-archive', body: {} });
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    assert.equal((await sb.ledger(accountId)).length, 1);
  });

  it('refuses the same key with a different body or on another ad with 422, applying nothing', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const other = productAd(ads);
    await update(credential, ad.id, { name: 'Kept name' }, 'key-reused');
    for (const res of [
      await update<ErrorJson>(credential, ad.id, { name: 'Other name' }, 'key-reused'),
      await update<ErrorJson>(credential, other.id, { name: 'Kept name' }, 'key-reused'),
      await archiveAd<ErrorJson>(credential, ad.id, { key: 'key-reused' }),
    ]) {
      assert.equal(res.status, 422);
      assert.equal(res.body.error.code, 'idempotency_key_reused');
    }
    const now = await getAd(credential, ad.id);
    assert.equal(now.name, 'Kept name');
    assert.equal(now.status, ad.status);
    assert.deepEqual(await getAd(credential, other.id), other);
    assert.equal((await sb.ledger(accountId)).length, 1);
  });

  it('refuses a malformed key with 400 naming Idempotency-Key', async () => {
    const { accountId, credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    const res = await update<ErrorJson>(credential, ad.id, { name: 'Never applied' }, 'has space');
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'Idempotency-Key');
    assert.deepEqual(await getAd(credential, ad.id), ad);
    assert.deepEqual(await sb.ledger(accountId), []);
  });

  it('does not let a refused request use up its key', async () => {
    const { credential, ads } = await seeded();
    const ad = chatCardWithFile(ads);
    await update(credential, ad.id, { status: 'archived' });
    const refused = await update<ErrorJson>(credential, ad.id, { name: 'Too late' }, 'key-after-409');
    assert.equal(refused.status, 409);
    const fresh = productAd(ads);
    const applied = await update(credential, fresh.id, { name: 'Too late' }, 'key-after-409');
    assert.equal(applied.status, 200);
    assert.equal(applied.headers.get('idempotent-replayed'), null);
    assert.equal(applied.body.name, 'Too late');
  });
});
