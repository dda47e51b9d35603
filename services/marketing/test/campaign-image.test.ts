/**
 * The image checks of a campaign asset, on images made here with sharp: the type sniffed from
 * the bytes, the size and dimension bounds, a decompression bomb refused from its header, the
 * EXIF orientation applied before measuring, and metadata (GPS) gone from what is stored.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import zlib from 'node:zlib';
import sharp from 'sharp';
import { checkImage, MAX_INPUT_BYTES } from '../src/images/campaign-image.ts';

const solid = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 40 } } });

const png = (width: number, height: number) => solid(width, height).png().toBuffer();

/** A PNG whose IHDR claims `width` × `height` (CRC fixed up), over a tiny 100 × 100 image's data. */
async function pngClaiming(width: number, height: number): Promise<Buffer> {
  const b = Buffer.from(await png(100, 100));
  // Signature (8), chunk length (4), "IHDR" (4): width at 16, height at 20, the CRC after the 13 data bytes.
  b.writeUInt32BE(width, 16);
  b.writeUInt32BE(height, 20);
  b.writeUInt32BE(zlib.crc32(b.subarray(12, 29)) >>> 0, 29);
  return b;
}

/** A PNG chunk: length, type, data and its CRC. */
function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(Buffer.concat([head.subarray(4), data])) >>> 0);
  return Buffer.concat([head, data, crc]);
}

/** `still` made an animated PNG declaring `frames` frames: an acTL chunk after its IHDR. */
function animated(still: Buffer, frames: number): Buffer {
  const actl = Buffer.alloc(8);
  actl.writeUInt32BE(frames, 0);
  // Signature (8) and the IHDR chunk (12 + 13) come first.
  return Buffer.concat([still.subarray(0, 33), chunk('acTL', actl), still.subarray(33)]);
}

async function refusal(bytes: Uint8Array, declared?: string): Promise<string> {
  try {
    await checkImage(bytes, 'content_base64', declared);
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail('the image was accepted');
}

describe('the type comes from the bytes', () => {
  test('a PNG sent with mime_type image/jpeg is saved as a PNG, and the mismatch is reported', async () => {
    const image = await checkImage(await png(120, 90), 'content_base64', 'image/jpeg');
    assert.equal(image.mimeType, 'image/png');
    assert.deepEqual(image.warnings, [
      'mime_type says image/jpeg, but the content is a PNG image; it was saved as image/png',
    ]);
    assert.equal((await sharp(image.content).metadata()).format, 'png');
  });

  test('a JPEG is saved as a JPEG, with no warning when mime_type agrees', async () => {
    const image = await checkImage(await solid(200, 150).jpeg().toBuffer(), 'content_base64', 'image/jpeg');
    assert.equal(image.mimeType, 'image/jpeg');
    assert.deepEqual(image.warnings, []);
    assert.equal(image.sha256.length, 64);
  });

  test('an animated PNG is kept as its still image, and the person is told', async () => {
    const still = await png(120, 90);
    const image = await checkImage(animated(still, 3), 'content_base64', 'image/png');
    assert.deepEqual(image.warnings, [
      "content_base64 is an animated PNG of 3 frames; an ad's image is still, so only its default image (usually the first frame) was kept",
    ]);
    assert.deepEqual([image.width, image.height], [120, 90]);
    assert.equal(
      (await checkImage(still, 'content_base64')).warnings.length,
      0,
      'a still PNG has no warning',
    );
  });

  test('a GIF is refused by its signature, whatever mime_type says', async () => {
    const gif = await solid(100, 100).gif().toBuffer();
    assert.equal(
      await refusal(gif, 'image/png'),
      'content_base64 is a GIF image; only PNG and JPEG images are accepted',
    );
  });

  test('bytes that are no image at all are refused', async () => {
    assert.match(await refusal(Buffer.from('hello, world')), /is not a PNG or JPEG image/);
  });

  test('a PNG signature followed by garbage is refused as unreadable', async () => {
    const broken = Buffer.concat([(await png(100, 100)).subarray(0, 8), Buffer.alloc(64, 7)]);
    assert.match(await refusal(broken), /content_base64 is not a readable PNG image/);
  });
});

describe('damaged images', () => {
  test('a PNG whose data fails its checksum is refused as damaged, not in libvips’ encoder words', async () => {
    const damaged = Buffer.from(await png(200, 100));
    damaged[29] = (damaged[29] ?? 0) ^ 0xff; // the IHDR chunk's CRC
    const message = await refusal(damaged);
    assert.equal(
      message,
      'content_base64 could not be decoded as a PNG image: its data is damaged or truncated',
    );
  });

  test('a truncated JPEG is refused as damaged, each reason libvips gives said once', async () => {
    const message = await refusal(Buffer.from([0xff, 0xd8, 0xff]));
    assert.match(message, /^content_base64 is not a readable JPEG image: its data is damaged or truncated: /);
    assert.doesNotMatch(message, /\n/);
    const reasons = message.split(': ').slice(2).join(': ').split('; ');
    assert.deepEqual(reasons, [...new Set(reasons)]);
  });
});

describe('the bounds', () => {
  test('an image 79 pixels wide is refused; 80 is accepted', async () => {
    assert.equal(
      await refusal(await png(79, 200)),
      'content_base64 is 79 × 200 pixels (after its EXIF orientation); each side must be 80 to 4096 pixels',
    );
    assert.equal((await checkImage(await png(80, 200), 'content_base64')).width, 80);
  });

  test('an image 4097 pixels high is refused; 4096 is accepted', async () => {
    assert.equal(
      await refusal(await png(100, 4097)),
      'content_base64 is 100 × 4097 pixels (after its EXIF orientation); each side must be 80 to 4096 pixels',
    );
    assert.equal((await checkImage(await png(100, 4096), 'content_base64')).height, 4096);
  });

  test('more than 1 MiB is refused before anything else is looked at', async () => {
    const big = Buffer.concat([await png(100, 100), Buffer.alloc(MAX_INPUT_BYTES)]);
    assert.equal(
      await refusal(big),
      `content_base64 is ${big.length} bytes; an image may be at most 1048576 bytes (1 MiB)`,
    );
  });

  test('a decompression bomb is refused from its header, before decoding', async () => {
    const bomb = await pngClaiming(100_000, 100_000);
    const started = performance.now();
    const message = await refusal(bomb);
    assert.equal(
      message,
      'content_base64 claims 100000 × 100000 pixels in its header, more than the 16777216 pixels allowed; it was refused before decoding (each side must be 80 to 4096 pixels)',
    );
    // Decoding 10^10 pixels would take minutes and gigabytes; reading a header takes milliseconds.
    assert.ok(performance.now() - started < 2000);
  });

  test('a header claiming a side over 4096 within the pixel budget is refused by its side', async () => {
    assert.match(await refusal(await pngClaiming(8000, 100)), /is 8000 × 100 pixels/);
  });
});

describe('orientation and metadata', () => {
  test('an EXIF-rotated JPEG is measured and stored upright', async () => {
    // Stored 300 × 100, orientation 6 (rotate 90°): upright it is 100 × 300.
    const rotated = await solid(300, 100).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    assert.equal((await sharp(rotated).metadata()).orientation, 6);
    const image = await checkImage(rotated, 'content_base64');
    assert.deepEqual([image.width, image.height], [100, 300]);
    const stored = await sharp(image.content).metadata();
    assert.deepEqual([stored.width, stored.height, stored.orientation], [100, 300, undefined]);
  });

  test('a side that is 79 pixels only once turned upright is refused', async () => {
    const rotated = await solid(200, 79).jpeg().withMetadata({ orientation: 8 }).toBuffer();
    assert.match(await refusal(rotated), /is 79 × 200 pixels \(after its EXIF orientation\)/);
  });

  test('EXIF with a GPS position is not in the stored image', async () => {
    const tagged = await solid(160, 120)
      .jpeg()
      .withExif({
        IFD0: { Copyright: 'Someone', Artist: 'Photographer' },
        IFD3: {
          GPSLatitudeRef: 'N',
          GPSLatitude: '51/1 30/1 0/1',
          GPSLongitudeRef: 'W',
          GPSLongitude: '0/1 7/1 0/1',
        },
      })
      .toBuffer();
    const before = await sharp(tagged).metadata();
    // The input carries the EXIF block (with its GPS directory); nothing of it may be stored.
    assert.ok(before.exif?.includes(Buffer.from('Photographer')));
    const image = await checkImage(tagged, 'content_base64');
    const after = await sharp(image.content).metadata();
    assert.equal(after.exif, undefined);
    assert.equal(after.icc, undefined);
    assert.equal(after.xmp, undefined);
    assert.equal(image.content.includes(Buffer.from('Photographer')), false);
  });
});
