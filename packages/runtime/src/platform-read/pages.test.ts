import assert from 'node:assert/strict';
import { test } from 'node:test';
import { items, PagingLimitError, type PlatformPage, pages } from './pages.ts';

/** A platform list of `n` objects served `size` to a page, as the platform pages: an `after` cursor while has_more. */
function list(n: number, size: number) {
  const reads: (string | undefined)[] = [];
  const readPage = async (after: string | undefined): Promise<PlatformPage> => {
    reads.push(after);
    const start = after === undefined ? 0 : Number(after.slice(2));
    const end = Math.min(n, start + size);
    const data = Array.from({ length: end - start }, (_, i) => ({ id: `ad_${start + i}` }));
    return { data, paging: { after: end < n ? `c:${end}` : null, before: null, has_more: end < n } };
  };
  return { readPage, reads };
}

test('every item of every page is read, following after to the last page', async () => {
  const { readPage, reads } = list(1234, 500);
  const seen: string[] = [];
  for await (const item of items(readPage, { maxPages: 10, what: 'the ads' })) seen.push(String(item.id));
  assert.equal(seen.length, 1234);
  assert.equal(new Set(seen).size, 1234);
  assert.deepEqual(reads, [undefined, 'c:500', 'c:1000']);
});

test('a read needing more pages than its cap is refused, saying so, not cut short', async () => {
  const { readPage } = list(1001, 100);
  const got: number[] = [];
  await assert.rejects(
    async () => {
      for await (const page of pages(readPage, { maxPages: 10, what: 'the ads of ad account A' }))
        got.push(page.length);
    },
    (err: unknown) =>
      err instanceof PagingLimitError &&
      err.message ===
        'the ads of ad account A take more than 10 pages of the ad platform; reading stopped there rather than return part of them',
  );
  assert.equal(got.length, 10);
});

test('exactly the cap of pages is read in full', async () => {
  const { readPage } = list(1000, 100);
  let n = 0;
  for await (const item of items(readPage, { maxPages: 10, what: 'the ads' })) if (item.id !== undefined) n++;
  assert.equal(n, 1000);
});

test('a cursor the platform repeats is an error, not an endless loop', async () => {
  const readPage = async (): Promise<PlatformPage> => ({
    data: [{ id: 'x' }],
    paging: { after: 'same', before: null, has_more: true },
  });
  await assert.rejects(async () => {
    for await (const _ of items(readPage, { maxPages: 100, what: 'the ads' })) {
      // reading
    }
  }, /the ads: the ad platform gave the cursor same twice; paging stopped/);
});
