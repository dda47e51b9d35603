/**
 * A file upload end to end: the real upstream-proxy (its Connect server, budget and platform
 * client) in front of the real ads sandbox over HTTP, each on its own PostgreSQL schema.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FileJson } from '@adsmcp/ads-sandbox/files';
import type { Principal } from '@adsmcp/runtime/principal';
import sharp from 'sharp';
import { principal, type Stack, startStack } from './stack.ts';

let stack: Stack;
let admin: Principal;
let accountId: string;

before(async () => {
  stack = await startStack();
  admin = principal();
  const sandboxAccount = await stack.newSandboxAccount();
  const { account } = await stack.client.createConnection(
    {
      name: 'Uploads',
      currency: 'USD',
      timeZone: 'America/New_York',
      canWrite: true,
      upstreamAccountId: sandboxAccount.accountId,
      upstreamCredential: sandboxAccount.credential,
    },
    stack.as(admin),
  );
  accountId = account?.accountId ?? '';
});

after(async () => {
  await stack?.stop();
});

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

const upload = (body: Uint8Array, contentType: string, idempotencyKey: string) =>
  stack.client.call(
    { accountId, method: 'POST', path: '/files', body, contentType, idempotencyKey },
    stack.as(admin),
  );

describe('a file upload through the upstream-proxy to the platform', () => {
  it('uploads a PNG of nearly 5 MiB and returns the platform’s file, then the same file for the same bytes', async () => {
    // Random pixels stored without compression: about 3 bytes a pixel, just under 5 MiB.
    const png = await sharp(randomBytes(1740 * 1000 * 3), { raw: { width: 1740, height: 1000, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer();
    assert.ok(png.length > 4.9 * 1024 * 1024 && png.length <= 5 * 1024 * 1024, String(png.length));

    const first = await upload(png, 'image/png', 'upload-big-1');
    assert.equal(first.status, 201, first.bodyJson);
    assert.equal(first.attempts, 1);
    const file = JSON.parse(first.bodyJson) as FileJson;
    assert.deepEqual(
      { ...file, file_id: undefined, created_at: undefined },
      {
        file_id: undefined,
        mime_type: 'image/png',
        byte_size: png.length,
        width: 1740,
        height: 1000,
        sha256: sha256(png),
        created_at: undefined,
      },
    );
    assert.match(file.file_id, /^file_[0-9a-f]{24}$/);

    const again = await upload(png, 'image/png', 'upload-big-2');
    assert.equal(again.status, 200);
    assert.deepEqual(JSON.parse(again.bodyJson), file);

    const read = await stack.client.call(
      { accountId, method: 'GET', path: `/files/${file.file_id}` },
      stack.as(admin),
    );
    assert.equal(read.status, 200);
    assert.deepEqual(JSON.parse(read.bodyJson), file);
  });

  it('uploads a JPEG', async () => {
    const jpeg = await sharp({ create: { width: 640, height: 360, channels: 3, background: '#2a6' } })
      .jpeg()
      .toBuffer();
    const res = await upload(jpeg, 'image/jpeg', 'upload-jpeg');
    assert.equal(res.status, 201, res.bodyJson);
    const file = JSON.parse(res.bodyJson) as FileJson;
    assert.deepEqual(
      [file.mime_type, file.width, file.height, file.sha256],
      ['image/jpeg', 640, 360, sha256(jpeg)],
    );
  });

  it('returns the platform’s refusal of a damaged file as its answer, with the field it names', async () => {
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#a26' } })
      .png()
      .toBuffer();
    const res = await upload(png.subarray(0, 40), 'image/png', 'upload-damaged');
    assert.equal(res.status, 400);
    const { error } = JSON.parse(res.bodyJson) as { error: { code: string; field: string; message: string } };
    assert.equal(error.code, 'invalid_request');
    assert.equal(error.field, 'file');
    assert.match(error.message, /^the file is not a decodable PNG image/);
  });
});
