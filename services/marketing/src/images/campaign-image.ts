/**
 * The checks and re-encoding of a campaign image, with sharp (libvips). The type is sniffed from
 * the bytes, never taken from what the caller says; the size is bounded before anything is
 * decoded; the dimensions come from the header, so a decompression bomb (a small file that
 * claims a huge canvas) is refused before a pixel is decoded; the image is then decoded, turned
 * upright by its EXIF orientation and re-encoded, which drops every piece of metadata (EXIF with
 * GPS, ICC, XMP, comments): sharp keeps none unless asked to.
 *
 * Decoding and encoding run on libuv's thread pool (sharp's operations are asynchronous native
 * work), so the event loop is not blocked while an image is processed; no worker thread is needed.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import sharp from 'sharp';

/** The largest image accepted, in bytes as uploaded or fetched (1 MiB). */
export const MAX_INPUT_BYTES = 1024 * 1024;
/** Each side, in pixels, after the EXIF orientation is applied. */
export const MIN_SIDE = 80;
export const MAX_SIDE = 4096;
/** The most pixels any image may have: what the side limits allow, and all sharp may decode. */
export const MAX_PIXELS = MAX_SIDE * MAX_SIDE;
/** The re-encoded image may come out larger than the input; beyond this it is refused. */
export const MAX_STORED_BYTES = 4 * 1024 * 1024;
/** How the JPEG is re-encoded: high enough that a second generation loses little. */
const JPEG_QUALITY = 90;

export const IMAGE_TYPES = ['image/png', 'image/jpeg'] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];

// Decoded images of one workspace are not kept in libvips' operation cache for the next request.
sharp.cache(false);

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG_SIGNATURE = Buffer.from([0xff, 0xd8, 0xff]);

const startsWith = (bytes: Uint8Array, prefix: Uint8Array) =>
  bytes.length >= prefix.length && Buffer.from(bytes.buffer, bytes.byteOffset, prefix.length).equals(prefix);
const ascii = (bytes: Uint8Array, from: number, to: number) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1', from, to);

/** The names of formats people send by mistake, found by their signatures, to say what was sent. */
function otherFormat(bytes: Uint8Array): string | undefined {
  if (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a') return 'a GIF image';
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP') return 'a WebP image';
  if (ascii(bytes, 4, 8) === 'ftyp') return 'an HEIC/AVIF image';
  if (ascii(bytes, 0, 2) === 'BM') return 'a BMP image';
  if (ascii(bytes, 0, 5) === '<?xml' || ascii(bytes, 0, 4) === '<svg') return 'an SVG or XML document';
  return undefined;
}

/**
 * sniffType returns the type of `bytes` by their signature (magic bytes): PNG or JPEG. Anything
 * else is refused, naming what it is when it is a format we recognise. `what` names the input.
 */
export function sniffType(bytes: Uint8Array, what: string): ImageType {
  if (startsWith(bytes, PNG_SIGNATURE)) return 'image/png';
  if (startsWith(bytes, JPEG_SIGNATURE)) return 'image/jpeg';
  const other = otherFormat(bytes);
  throw new InvalidArgumentError(
    `${what} is ${other ?? 'not a PNG or JPEG image (its first bytes are neither signature)'}; only PNG and JPEG images are accepted`,
  );
}

const TYPE_NAME: Record<ImageType, string> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG' };

/** A checked, upright, re-encoded image without metadata: what is stored. */
export interface CheckedImage {
  content: Buffer;
  mimeType: ImageType;
  width: number;
  height: number;
  /** Hex SHA-256 of `content`. */
  sha256: string;
  /** What the caller should know: a declared type the bytes contradicted. */
  warnings: string[];
}

function checkSides(width: number, height: number, what: string, when: string): void {
  const fits = (side: number) => side >= MIN_SIDE && side <= MAX_SIDE;
  if (fits(width) && fits(height)) return;
  throw new InvalidArgumentError(
    `${what} is ${width} × ${height} pixels ${when}; each side must be ${MIN_SIDE} to ${MAX_SIDE} pixels`,
  );
}

/**
 * libvips' reason for a refused image, in the words a person can act on: each distinct line once,
 * without the encoder's "unable to write to target", which is what libvips says when the decode
 * it was writing from failed (not a failure to write anything), and which alone names no cause.
 */
function decodeReason(err: unknown): string {
  const lines = String((err as Error).message ?? err)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/unable to write to target/.test(line));
  const distinct = [...new Set(lines)];
  return distinct.length === 0
    ? 'its data is damaged or truncated'
    : `its data is damaged or truncated: ${distinct.join('; ')}`;
}

/** The image's upright dimensions from its header alone: nothing is decoded. */
async function headerSize(bytes: Uint8Array, type: ImageType, what: string) {
  // Reading the header decodes nothing; the limit is ours, checked below with the sizes named.
  const meta = await sharp(bytes, { limitInputPixels: false })
    .metadata()
    .catch((err: unknown) => {
      throw new InvalidArgumentError(
        `${what} is not a readable ${TYPE_NAME[type]} image: ${decodeReason(err)}`,
      );
    });
  const { width, height } = meta.autoOrient;
  if (width === undefined || height === undefined) {
    throw new InvalidArgumentError(`${what} is a ${TYPE_NAME[type]} image whose header states no size`);
  }
  // The pixel count first: a huge claimed canvas is a decompression bomb and is never decoded.
  if (width * height > MAX_PIXELS) {
    throw new InvalidArgumentError(
      `${what} claims ${width} × ${height} pixels in its header, more than the ${MAX_PIXELS} pixels allowed; it was refused before decoding (each side must be ${MIN_SIDE} to ${MAX_SIDE} pixels)`,
    );
  }
  checkSides(width, height, what, '(after its EXIF orientation)');
}

/**
 * The frames an animated PNG declares in its acTL chunk, which comes before the image data; 1 for
 * a still PNG. libvips decodes only the default image, so an animation is kept as its first
 * frame, and the person is told. The chunks are walked by their lengths (no library reports
 * APNG animation), and a malformed walk counts as still: the decoder judges the data.
 */
function pngAnimationFrames(bytes: Uint8Array): number {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  for (let at = PNG_SIGNATURE.length; at + 8 <= b.length; ) {
    const length = b.readUInt32BE(at);
    const type = b.toString('latin1', at + 4, at + 8);
    if (type === 'IDAT' || type === 'IEND') return 1;
    if (type === 'acTL' && length >= 8 && at + 12 <= b.length) return Math.max(1, b.readUInt32BE(at + 8));
    at += 12 + length;
  }
  return 1;
}

/** Decodes, turns upright and re-encodes in the same type: the output carries no metadata. */
async function reencode(bytes: Uint8Array, type: ImageType, what: string) {
  // limitInputPixels backs the header check; failOn 'error' refuses a damaged or truncated image.
  const image = sharp(bytes, { limitInputPixels: MAX_PIXELS, failOn: 'error', autoOrient: true });
  const encoder = type === 'image/png' ? image.png() : image.jpeg({ quality: JPEG_QUALITY });
  try {
    return await encoder.toBuffer({ resolveWithObject: true });
  } catch (err) {
    throw new InvalidArgumentError(
      `${what} could not be decoded as a ${TYPE_NAME[type]} image: ${decodeReason(err)}`,
    );
  }
}

/**
 * checkImage checks an image as uploaded or fetched (`what` names it in messages, such as
 * "content_base64") and returns it re-encoded for storing. `declared` is the mime_type the caller
 * gave, if any: the bytes decide, and a contradiction is reported in the warnings.
 */
export async function checkImage(bytes: Uint8Array, what: string, declared?: string): Promise<CheckedImage> {
  if (bytes.length === 0) throw new InvalidArgumentError(`${what} is empty`);
  if (bytes.length > MAX_INPUT_BYTES) {
    throw new InvalidArgumentError(
      `${what} is ${bytes.length} bytes; an image may be at most ${MAX_INPUT_BYTES} bytes (1 MiB)`,
    );
  }
  const type = sniffType(bytes, what);
  await headerSize(bytes, type, what);
  const { data, info } = await reencode(bytes, type, what);
  checkSides(info.width, info.height, what, '(decoded, after its EXIF orientation)');
  if (data.length > MAX_STORED_BYTES) {
    throw new InvalidArgumentError(
      `${what} re-encodes to ${data.length} bytes, more than the ${MAX_STORED_BYTES} bytes an asset may store; send a smaller or more compressible image`,
    );
  }
  const warnings: string[] = [];
  if (declared !== undefined && declared !== type) {
    warnings.push(
      `mime_type says ${declared}, but the content is a ${TYPE_NAME[type]} image; it was saved as ${type}`,
    );
  }
  const frames = type === 'image/png' ? pngAnimationFrames(bytes) : 1;
  if (frames > 1) {
    warnings.push(
      `${what} is an animated PNG of ${frames} frames; an ad's image is still, so only its default image (usually the first frame) was kept`,
    );
  }
  return {
    content: data,
    mimeType: type,
    width: info.width,
    height: info.height,
    sha256: createHash('sha256').update(data).digest('hex'),
    warnings,
  };
}
