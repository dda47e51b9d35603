/**
 * Reading an asset's image from its source_url: only through the project's one request-forgery
 * guard (@adsmcp/runtime/safe-fetch), which allows https only, resolves the name once, refuses
 * loopback, private and the other special ranges, pins the connection to the checked address,
 * checks every redirect, and bounds time and size. Its refusal is passed on in its own words.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { createSafeFetcher, type SafeFetch, SafeFetchError } from '@adsmcp/runtime/safe-fetch';
import { MAX_INPUT_BYTES } from './campaign-image.ts';

export type ImageFetch = SafeFetch;

let productFetch: SafeFetch | undefined;

/** The product's fetcher: the guard's defaults, no test options. Created on first use. */
function defaultFetch(): SafeFetch {
  productFetch ??= createSafeFetcher();
  return productFetch;
}

/**
 * fetchImage returns the bytes at `url` (at most 1 MiB, what an image may be), read through
 * `fetch` or the product's safe fetcher, stopped when `signal` (the call's) is aborted. A refused,
 * failed or stopped fetch, or an answer other than 200, is an InvalidArgumentError naming
 * source_url.
 */
export async function fetchImage(
  fetch: SafeFetch | undefined,
  url: string,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  let res: Awaited<ReturnType<SafeFetch>>;
  try {
    res = await (fetch ?? defaultFetch())(url, {
      maxBytes: MAX_INPUT_BYTES,
      accept: 'image/png, image/jpeg',
      ...(signal === undefined ? {} : { signal }),
    });
  } catch (err) {
    if (err instanceof SafeFetchError) {
      throw new InvalidArgumentError(`source_url could not be fetched: ${err.message}`);
    }
    throw err;
  }
  if (res.status !== 200) {
    throw new InvalidArgumentError(`source_url could not be fetched: ${res.url} answered HTTP ${res.status}`);
  }
  return res.body;
}
