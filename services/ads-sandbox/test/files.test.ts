import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import type { AdJson } from '../src/ads.ts';
import { type FileJson, fileIdOf, MAX_FILE_BYTES } from '../src/files.ts';
import type { ErrorJson, Sandbox, SandboxAccount } from './sandbox.ts';
import { startSandbox } from './sandbox.ts';

/** The fake clock: every file is created at its time. */
const clock = Date.parse('2026-03-04T05:06:07.089Z');
let sb: Sandbox;
let account: SandboxAccount;

before(async () => {
  sb = await startSandbox({ now: () => clock });
  account = await sb.newAccount();
});

after(async () => {
  await sb?.stop();
});

/** A new image of one colour; `colour` makes its bytes differ from another's. */
function image(type: 'png' | 'jpeg', width: number, height: number, colour = 0): Promise<Buffer> {
  const drawn = sharp({
    create: { width, height, channels: 3, background: { r: colour % 256, g: 120, b: 30 } },
  });
  return (type === 'png' ? drawn.png() : drawn.jpeg()).toBuffer();
}

/** A PNG of random pixels, stored without compression: about 3 bytes per pixel. */
function noisePng(width: number, height: number): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer();
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

function upload<T = FileJson>(
  bytes: Uint8Array,
  contentType: string | undefined,
  opts: { key?: string; as?: SandboxAccount } = {},
) {
  return sb.call<T>('POST', '/files', {
    token: (opts.as ?? account).credential,
    bytes,
    headers: {
      ...(contentType === undefined ? {} : { 'content-type': contentType }),
      'idempotency-key': opts.key ?? `upload-${randomBytes(6).toString('hex')}`,
    },
  });
}

async function filesStored(accountId: string): Promise<number> {
  const { rows } = await sb.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM files WHERE account_id = $1',
    [accountId],
  );
  return rows[0]?.n ?? 0;
}

describe('POST /files', () => {
  it('takes a PNG and answers 201 with the file, its size, dimensions and hash', async () => {
    const png = await image('png', 320, 200, 1);
    const res = await upload(png, 'image/png');
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body, {
      file_id: fileIdOf(account.accountId, sha256(png)),
      mime_type: 'image/png',
      byte_size: png.length,
      width: 320,
      height: 200,
      sha256: sha256(png),
      created_at: '2026-03-04T05:06:07.089Z',
    });
    assert.match(res.body.file_id, /^file_[0-9a-f]{24}$/);
  });

  it('takes a JPEG', async () => {
    const jpeg = await image('jpeg', 150, 400, 2);
    const res = await upload(jpeg, 'image/jpeg');
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.mime_type, 'image/jpeg');
    assert.equal(res.body.byte_size, jpeg.length);
    assert.deepEqual([res.body.width, res.body.height], [150, 400]);
  });

  it('takes a file of nearly 5 MiB, beyond the 1 MiB every JSON route keeps', async () => {
    const big = await noisePng(1700, 1000);
    assert.ok(big.length > 4.5 * 1024 * 1024 && big.length <= MAX_FILE_BYTES, String(big.length));
    const res = await upload(big, 'image/png');
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.byte_size, big.length);
  });

  it('answers the same file (200, same id and created_at) for the same bytes under another key, storing one', async () => {
    const other = await sb.newAccount();
    // Its seeded ads' images are files already.
    const seeded = await filesStored(other.accountId);
    const png = await image('png', 90, 90, 3);
    const first = await upload(png, 'image/png', { as: other });
    const again = await upload(png, 'image/png', { as: other });
    assert.equal(first.status, 201);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), null);
    assert.deepEqual(again.body, first.body);
    assert.equal(await filesStored(other.accountId), seeded + 1);

    const different = await upload(await image('png', 90, 90, 4), 'image/png', { as: other });
    assert.equal(different.status, 201);
    assert.notEqual(different.body.file_id, first.body.file_id);
    assert.equal(await filesStored(other.accountId), seeded + 2);
  });

  it("gives another account's upload of the same bytes a file of its own", async () => {
    const png = await image('png', 64, 64, 5);
    const mine = await upload(png, 'image/png');
    const other = await sb.newAccount();
    const theirs = await upload(png, 'image/png', { as: other });
    assert.equal(theirs.status, 201);
    assert.notEqual(theirs.body.file_id, mine.body.file_id);
  });

  it('replays a retry with the same key, and refuses the key with other bytes (422), recording the hash', async () => {
    const png = await image('png', 100, 50, 6);
    const first = await upload(png, 'image/png', { key: 'upload-once' });
    const retry = await upload(png, 'image/png', { key: 'upload-once' });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);

    const reused = await upload<ErrorJson>(await image('png', 100, 50, 7), 'image/png', {
      key: 'upload-once',
    });
    assert.equal(reused.status, 422);
    assert.equal(reused.body.error.code, 'idempotency_key_reused');

    const entries = await sb.ledger(account.accountId, '/files');
    const entry = entries.find((e) => e.idempotency_key === 'upload-once');
    assert.deepEqual(entry?.request_body, {
      content_type: 'image/png',
      byte_size: png.length,
      sha256: sha256(png),
    });
  });

  it('takes a Content-Type with parameters and in capitals', async () => {
    const res = await upload(await image('png', 80, 80, 8), 'Image/PNG; charset=binary');
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.mime_type, 'image/png');
  });

  it('refuses an unauthenticated upload (401) without reading it', async () => {
    const res = await sb.call<ErrorJson>('POST', '/files', {
      bytes: await image('png', 10, 10),
      headers: { 'content-type': 'image/png' },
    });
    assert.equal(res.status, 401);
  });
});

describe('POST /files refusals', () => {
  const refusedWith = async (
    res: { status: number; body: ErrorJson },
    status: number,
    field: string,
    message: RegExp,
  ) => {
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'invalid_request');
    assert.equal(res.body.error.field, field);
    assert.match(res.body.error.message, message);
  };

  for (const type of ['image/gif', 'application/json', 'text/plain', 'application/octet-stream']) {
    it(`refuses Content-Type ${type} with 415 naming Content-Type`, async () => {
      const res = await upload<ErrorJson>(await image('png', 10, 10), type);
      await refusedWith(
        res,
        415,
        'Content-Type',
        new RegExp(`^Content-Type must be image/png or image/jpeg.*got "${type}"`),
      );
    });
  }

  it('refuses a body without a Content-Type with 415', async () => {
    const res = await upload<ErrorJson>(await image('png', 10, 10), undefined);
    await refusedWith(res, 415, 'Content-Type', /^Content-Type must be image\/png or image\/jpeg/);
  });

  it('refuses a request without a body (415) and an empty file (400)', async () => {
    const none = await sb.call<ErrorJson>('POST', '/files', {
      token: account.credential,
      headers: { 'idempotency-key': 'no-body' },
    });
    await refusedWith(none, 415, 'Content-Type', /got none/);
    const empty = await upload<ErrorJson>(new Uint8Array(0), 'image/png');
    await refusedWith(empty, 400, 'file', /^the file is empty/);
  });

  it('refuses a file over 5 MiB with 413 naming the limit', async () => {
    const res = await upload<ErrorJson>(randomBytes(MAX_FILE_BYTES + 1), 'image/png');
    await refusedWith(res, 413, 'file', /^the file must be at most 5242880 bytes \(5 MiB\)/);
  });

  it('refuses bytes that are no image, naming the file and the declared type', async () => {
    const res = await upload<ErrorJson>(Buffer.from('this is not an image at all'), 'image/png');
    await refusedWith(
      res,
      400,
      'file',
      /^the file is not a decodable PNG image \(Content-Type image\/png\): /,
    );
  });

  it('refuses a truncated PNG, whose header alone reads well', async () => {
    const png = await noisePng(200, 200);
    const res = await upload<ErrorJson>(png.subarray(0, Math.floor(png.length / 2)), 'image/png');
    await refusedWith(res, 400, 'file', /^the file is not a decodable PNG image/);
  });

  it('refuses a truncated JPEG', async () => {
    const jpeg = await sharp(randomBytes(200 * 200 * 3), { raw: { width: 200, height: 200, channels: 3 } })
      .jpeg()
      .toBuffer();
    const res = await upload<ErrorJson>(jpeg.subarray(0, Math.floor(jpeg.length / 2)), 'image/jpeg');
    await refusedWith(res, 400, 'file', /^the file is not a decodable JPEG image/);
  });

  it('refuses a JPEG sent as image/png, and a PNG sent as image/jpeg', async () => {
    const asPng = await upload<ErrorJson>(await image('jpeg', 20, 20), 'image/png');
    await refusedWith(asPng, 400, 'file', /^the file is a JPEG image, but Content-Type says image\/png/);
    const asJpeg = await upload<ErrorJson>(await image('png', 20, 20), 'image/jpeg');
    await refusedWith(asJpeg, 400, 'file', /^the file is a PNG image, but Content-Type says image\/jpeg/);
  });

  it('refuses a query string', async () => {
    const res = await sb.call<ErrorJson>('POST', '/files?name=x', {
      token: account.credential,
      bytes: await image('png', 10, 10),
      headers: { 'content-type': 'image/png' },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.field, 'name');
  });

  it('records nothing for a refused upload', async () => {
    const fresh = await sb.newAccount();
    const seeded = await filesStored(fresh.accountId);
    await upload(Buffer.from('garbage'), 'image/png', { as: fresh });
    await upload(await image('jpeg', 20, 20), 'image/png', { as: fresh });
    assert.equal(await filesStored(fresh.accountId), seeded);
    assert.deepEqual(await sb.ledger(fresh.accountId, '/files'), []);
  });
});

describe('GET /files/{file_id}', () => {
  it('answers the file as the upload did', async () => {
    const uploaded = await upload(await image('jpeg', 33, 44, 9), 'image/jpeg');
    const res = await sb.call<FileJson>('GET', `/files/${uploaded.body.file_id}`, {
      token: account.credential,
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, uploaded.body);
  });

  it('answers the image of each seeded chat card: a file of the account, distinct per ad', async () => {
    const ads = await sb.call<{ data: AdJson[] }>('GET', '/ads?limit=500', { token: account.credential });
    const fileIds = ads.body.data.flatMap((a) =>
      a.creative.type === 'chat_card' ? [a.creative.file_id] : [],
    );
    assert.equal(fileIds.length, 6);
    assert.equal(new Set(fileIds).size, fileIds.length);
    for (const fileId of fileIds) {
      const res = await sb.call<FileJson>('GET', `/files/${fileId}`, { token: account.credential });
      assert.equal(res.status, 200, String(fileId));
      assert.equal(res.body.file_id, fileId);
      assert.equal(fileIdOf(account.accountId, res.body.sha256), fileId);
      assert.deepEqual([res.body.mime_type, res.body.width, res.body.height], ['image/png', 1080, 1080]);
    }
  });

  it("answers 404 for an unknown id and for another account's file", async () => {
    const uploaded = await upload(await image('png', 12, 12, 10), 'image/png');
    const other = await sb.newAccount();
    const theirs = await sb.call<ErrorJson>('GET', `/files/${uploaded.body.file_id}`, {
      token: other.credential,
    });
    assert.equal(theirs.status, 404);
    assert.deepEqual(theirs.body, {
      error: { code: 'not_found', message: `no file ${uploaded.body.file_id} in this account` },
    });
    const unknown = await sb.call<ErrorJson>('GET', '/files/file_000000000000000000000000', {
      token: account.credential,
    });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'not_found');
  });
});

describe('the other routes keep their JSON bodies', () => {
  it('refuses an image body on a JSON route as before (415), so the raw parser is the upload’s only', async () => {
    const ads = await sb.call<{ data: { id: string }[] }>('GET', '/ads?limit=1', {
      token: account.credential,
    });
    const adId = ads.body.data[0]?.id ?? '';
    const res = await sb.call<ErrorJson>('POST', `/ads/${adId}`, {
      token: account.credential,
      bytes: await image('png', 10, 10),
      headers: { 'content-type': 'image/png', 'idempotency-key': 'png-to-ad' },
    });
    assert.equal(res.status, 415);
    assert.equal(res.body.error.code, 'invalid_request');
  });

  it('still refuses a JSON body over 1 MiB on a JSON route (413)', async () => {
    const res = await sb.call<ErrorJson>('POST', '/conversions/pixels', {
      token: account.credential,
      rawBody: JSON.stringify({ name: 'x'.repeat(1024 * 1024), client_type: 'web' }),
      headers: { 'idempotency-key': 'big-pixel' },
    });
    assert.equal(res.status, 413);
  });
});
