import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { digestOf } from './change.ts';
import { appliedDifferences } from './plan.ts';
import { assetRefs, type Upload, uploadsDigestPart, withFileIds } from './uploads.ts';

const A = '0f8e3c2a-5b1d-4c7e-9a3f-2d6b8e1c4a70';
const B = '7c2d9e4f-1a3b-4c5d-8e6f-9a0b1c2d3e4f';

const upload = (assetId: string, patch: Partial<Upload> = {}): Upload => ({
  asset_id: assetId,
  name: 'Spring picture',
  mime_type: 'image/png',
  byte_size: 1234,
  width: 160,
  height: 120,
  sha256: 'a'.repeat(64),
  file_id: '',
  ...patch,
});

test('assetRefs finds the asset of an ad creative and of each bulk job operation, in lower case', () => {
  assert.deepEqual(assetRefs({ creative: { title: 'x', asset_id: A.toUpperCase() } }), [
    { at: 'body.creative', assetId: A },
  ]);
  const job = {
    operations: [
      { type: 'create_campaign', body: { name: 'c' } },
      { type: 'create_ad', body: { creative: { title: 'a', asset_id: A } } },
      { type: 'create_ad', body: { creative: { title: 'b' } } },
      { type: 'create_ad', body: { creative: { title: 'c', asset_id: B } } },
    ],
  };
  assert.deepEqual(assetRefs(job), [
    { at: 'body.operations[1].body.creative', assetId: A },
    { at: 'body.operations[3].body.creative', assetId: B },
  ]);
  assert.deepEqual(assetRefs({ creative: { title: 'x', file_id: 'file_1' } }), []);
  // asset_id anywhere else is not a creative's image, and is left to the object's own rules.
  assert.deepEqual(assetRefs({ name: 'x', asset_id: A }), []);
});

test('assetRefs refuses an asset_id that is not a UUID, and a creative with two images, naming the creative', () => {
  assert.throws(
    () => assetRefs({ creative: { asset_id: 'spring.png' } }),
    (e: unknown) =>
      e instanceof InvalidArgumentError &&
      e.message === '`body.creative.asset_id` must be the UUID of a saved campaign asset',
  );
  assert.throws(
    () => assetRefs({ operations: [{ body: { creative: { asset_id: A, file_id: 'file_1' } } }] }),
    (e: unknown) =>
      e instanceof InvalidArgumentError &&
      /^`body\.operations\[0\]\.body\.creative` names both file_id and asset_id/.test(e.message),
  );
});

test('withFileIds sends each asset as the file it was uploaded as, and changes nothing else', () => {
  const body = {
    operations: [
      { type: 'create_ad', body: { name: 'a', creative: { title: 'a', asset_id: A } } },
      { type: 'create_ad', body: { name: 'b', creative: { title: 'b', asset_id: B.toUpperCase() } } },
    ],
  };
  const sent = withFileIds(body, [upload(A, { file_id: 'file_a' }), upload(B, { file_id: 'file_b' })]);
  assert.deepEqual(sent, {
    operations: [
      { type: 'create_ad', body: { name: 'a', creative: { title: 'a', file_id: 'file_a' } } },
      { type: 'create_ad', body: { name: 'b', creative: { title: 'b', file_id: 'file_b' } } },
    ],
  });
  // The reviewed body itself is kept as it was.
  assert.equal(body.operations[0]?.body.creative.asset_id, A);
  // An update's merged creative keeps the ad's old file until the new one replaces it.
  assert.deepEqual(
    withFileIds({ creative: { title: 't', file_id: 'file_old', asset_id: A } }, [
      upload(A, { file_id: 'file_a' }),
    ]),
    { creative: { title: 't', file_id: 'file_a' } },
  );
  assert.throws(() => withFileIds({ creative: { asset_id: A } }, [upload(A)]), /has not been uploaded/);
});

test('the digest pins each image: another image is another digest, and a change without one keeps its digest', () => {
  const op = { method: 'POST', path: '/ads/ad_1', bodyJson: JSON.stringify({ creative: { asset_id: A } }) };
  assert.equal(uploadsDigestPart([]), '');
  assert.equal(digestOf(op, []), digestOf(op));
  const pinned = digestOf(op, [upload(A)]);
  assert.notEqual(pinned, digestOf(op));
  assert.notEqual(pinned, digestOf(op, [upload(A, { sha256: 'b'.repeat(64) })]));
  // The order the assets were found in does not matter.
  assert.equal(digestOf(op, [upload(A), upload(B)]), digestOf(op, [upload(B), upload(A)]));
});

test('the applied check holds the answer against the uploaded file', () => {
  const reviewed = { creative: { title: 't', asset_id: A } };
  const uploads = [upload(A, { file_id: 'file_a' })];
  assert.deepEqual(
    appliedDifferences(
      withFileIds(reviewed, uploads),
      JSON.stringify({ creative: { title: 't', file_id: 'file_a' } }),
    ),
    [],
  );
  assert.deepEqual(
    appliedDifferences(
      withFileIds(reviewed, uploads),
      JSON.stringify({ creative: { title: 't', file_id: 'file_x' } }),
    ),
    ['creative.file_id: reviewed "file_a", applied "file_x"'],
  );
});
