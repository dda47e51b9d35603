/**
 * Uploaded image files (`POST /files`), whose ids go into an ad's `creative.file_id`. The
 * platform takes a PNG or JPEG as the raw request body and checks that it is what its
 * Content-Type says and that it decodes, reading its dimensions with sharp (libvips). A file is
 * identified by its account and the SHA-256 of its bytes, so uploading the same bytes again
 * answers the same file, as platforms deduplicate images by their hash. Only the metadata is
 * kept: nothing in the sandbox reads a file's bytes back.
 */
import sharp from 'sharp';
import { invalidRequest, PlatformHttpError } from './errors.ts';
import { sha256Hex } from './ids.ts';

/** The largest file the platform takes, in bytes as uploaded (5 MiB). */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;
export const FILE_TYPES = ['image/png', 'image/jpeg'] as const;
export type FileType = (typeof FILE_TYPES)[number];
/**
 * The most pixels a file's header may claim: what sharp decodes by default (16383 × 16383). A
 * larger claim is refused from the header, before a pixel is decoded (a decompression bomb).
 */
export const MAX_PIXELS = 0x3fff * 0x3fff;

/** The `field` of errors about the request body, the file itself. */
export const FILE_FIELD = 'file';
/** The `field` of errors about the declared type. */
export const CONTENT_TYPE_FIELD = 'Content-Type';

const FORMAT_OF: Record<FileType, string> = { 'image/png': 'png', 'image/jpeg': 'jpeg' };
const NAME_OF: Record<string, string> = { png: 'PNG', jpeg: 'JPEG', gif: 'GIF', webp: 'WebP', svg: 'SVG' };

// Decoded uploads are not kept in libvips' operation cache: each is checked once.
sharp.cache(false);

export interface FileRecord {
  id: string;
  accountId: string;
  mimeType: FileType;
  byteSize: number;
  width: number;
  height: number;
  sha256: string;
  createdAt: Date;
}

/** A file as the API returns it (POST /files, GET /files/{file_id}). */
export type FileJson = ReturnType<typeof fileJson>;

/** fileJson is a file as the API returns it. */
export function fileJson(f: FileRecord) {
  return {
    file_id: f.id,
    mime_type: f.mimeType,
    byte_size: f.byteSize,
    width: f.width,
    height: f.height,
    sha256: f.sha256,
    created_at: f.createdAt.toISOString(),
  };
}

/** fileIdOf is the id of the file with bytes of hash `sha256` in `accountId`: the same bytes, the same id. */
export function fileIdOf(accountId: string, sha256: string): string {
  return `file_${sha256Hex(`${accountId}|${sha256}`).slice(0, 24)}`;
}

/** The 415 for a body that is not sent as one of the file types. */
export function unsupportedFileType(got: string | undefined): PlatformHttpError {
  return new PlatformHttpError(
    415,
    'invalid_request',
    `Content-Type must be image/png or image/jpeg: the request body is the file itself (got ${got === undefined || got === '' ? 'none' : JSON.stringify(got)})`,
    { field: CONTENT_TYPE_FIELD },
  );
}

/** The 413 for a file over the limit. */
export function fileTooLarge(): PlatformHttpError {
  return new PlatformHttpError(
    413,
    'invalid_request',
    `the file must be at most ${MAX_FILE_BYTES} bytes (5 MiB)`,
    { field: FILE_FIELD },
  );
}

/** The first line of a libvips error, bounded: its messages run to several lines of decoder noise. */
function reason(err: unknown): string {
  const text = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * inspectImage checks that `bytes` are a whole image of type `declared` and returns its
 * dimensions, upright (after its EXIF orientation). The header is read first (nothing decoded), so a wrong type or a huge claimed
 * canvas is refused without decoding; then every pixel is decoded (`failOn: 'error'`), so a
 * damaged or truncated file is refused too. Each refusal is a 400 naming the file.
 */
export async function inspectImage(
  bytes: Uint8Array,
  declared: FileType,
): Promise<{ width: number; height: number }> {
  const wanted = NAME_OF[FORMAT_OF[declared]];
  const meta = await sharp(bytes, { limitInputPixels: false })
    .metadata()
    .catch((err: unknown) => {
      throw invalidRequest(
        FILE_FIELD,
        `the file is not a decodable ${wanted} image (Content-Type ${declared}): ${reason(err)}`,
      );
    });
  if (meta.format !== FORMAT_OF[declared]) {
    const found = NAME_OF[meta.format] ?? meta.format;
    throw invalidRequest(
      FILE_FIELD,
      `the file is a ${found} image, but Content-Type says ${declared}; only PNG (image/png) and JPEG (image/jpeg) files are taken, sent with their own type`,
    );
  }
  // As the image is shown: a photo stored 300 × 100 with EXIF orientation 6 is 100 × 300.
  const { width, height } = meta.autoOrient;
  if (width * height > MAX_PIXELS) {
    throw invalidRequest(
      FILE_FIELD,
      `the file claims ${width} × ${height} pixels, more than the ${MAX_PIXELS} pixels an image may have; it was refused before decoding`,
    );
  }
  try {
    await sharp(bytes, { limitInputPixels: MAX_PIXELS, failOn: 'error' }).stats();
  } catch (err) {
    throw invalidRequest(
      FILE_FIELD,
      `the file is not a decodable ${wanted} image (Content-Type ${declared}): ${reason(err)}`,
    );
  }
  return { width, height };
}
