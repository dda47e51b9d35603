import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  asciiHost,
  asciiUrl,
  confusableCharacters,
  describeHost,
  describeUrl,
  hostWarning,
  mixedScriptLabel,
  readHost,
  skeleton,
  unicodeHost,
} from './url-host.ts';

/** `shop.example.com` with a Cyrillic "а" (U+0430) for the Latin "a". */
const LOOKALIKE = 'shop.ex\u0430mple.com';

test('a host is read in its ASCII form (the IDNA A-label) and its Unicode form, from a host or a URL', () => {
  assert.equal(asciiHost(LOOKALIKE), 'shop.xn--exmple-4nf.com');
  assert.equal(asciiHost(`https://${LOOKALIKE}/spring?a=1`), 'shop.xn--exmple-4nf.com');
  assert.equal(unicodeHost('shop.xn--exmple-4nf.com'), LOOKALIKE);
  assert.equal(asciiHost('Shop.Example.COM'), 'shop.example.com');
  assert.equal(asciiHost('bücher.example'), 'xn--bcher-kva.example');
  assert.equal(unicodeHost('https://xn--bcher-kva.example/'), 'bücher.example');
  for (const invalid of ['', 'xn--zz.com', 'exa mple.com', 'a\u202eb.com'])
    assert.equal(asciiHost(invalid), undefined, invalid);
});

test('a label mixing Latin with Cyrillic or Greek is mixed-script; one script, or Latin with Han and kana or Hangul, is not', () => {
  assert.deepEqual(mixedScriptLabel(LOOKALIKE), { label: 'ex\u0430mple', scripts: ['Latin', 'Cyrillic'] });
  // Written as its A-label it is the same host, and just as mixed.
  assert.deepEqual(mixedScriptLabel('https://shop.xn--exmple-4nf.com/'), {
    label: 'ex\u0430mple',
    scripts: ['Latin', 'Cyrillic'],
  });
  assert.deepEqual(mixedScriptLabel('\u03c1\u03b1ypal.com')?.scripts, ['Greek', 'Latin']);
  for (const single of [
    'shop.example.com',
    'bücher.example',
    'пример.рф',
    'ソニー.jp',
    // Latin + Han + Hiragana/Katakana, Latin + Han + Hangul: UTS #39's highly restrictive mixes.
    '東京abc.jp',
    'とうきょうabc東京.jp',
    '한국abc漢字.kr',
    'shop-2.example.com',
    'пример.com',
  ])
    assert.equal(mixedScriptLabel(single), undefined, single);
  // Hangul and kana are not one writing system's mix.
  assert.ok(mixedScriptLabel('한국とうきょう.example'));
});

test('the skeleton makes hosts that look alike equal (UTS #39 confusables), whatever form they are written in', () => {
  assert.equal(skeleton(LOOKALIKE), skeleton('shop.example.com'));
  assert.equal(skeleton('shop.xn--exmple-4nf.com'), skeleton('shop.example.com'));
  assert.equal(skeleton('examp1e.com'), skeleton('example.com'));
  assert.equal(skeleton('exarnple.com'), skeleton('example.com'));
  assert.equal(skeleton('g00gle.com'), skeleton('google.com'));
  assert.notEqual(skeleton('shop.example.org'), skeleton('shop.example.com'));
  assert.notEqual(skeleton('bücher.example'), skeleton('bucher.example'));
});

test('the characters that pass for ASCII ones are named with their code points', () => {
  assert.deepEqual(confusableCharacters(LOOKALIKE), [
    { character: '\u0430', codePoint: 'U+0430', looksLike: 'a' },
  ]);
  assert.deepEqual(confusableCharacters('shop.example.com'), []);
  assert.deepEqual(confusableCharacters('bücher.example'), []);
});

test('a host is described for people by its ASCII form, with the Unicode form and the warning beside it', () => {
  assert.equal(
    describeHost(LOOKALIKE),
    'shop.xn--exmple-4nf.com (shown as "shop.ex\u0430mple.com": mixed Latin and Cyrillic letters; looks like shop.example.com)',
  );
  assert.equal(describeHost('bücher.example'), 'xn--bcher-kva.example (shown as "bücher.example")');
  assert.equal(
    describeHost('\u0430\u0440\u0440\u0435.com'),
    'xn--80ak6aa.com (shown as "\u0430\u0440\u0440\u0435.com": looks like appe.com)',
  );
  assert.equal(describeHost('shop.example.com'), 'shop.example.com');
  assert.equal(describeHost('examp1e.com', 'example.com'), 'examp1e.com (looks like example.com)');
  assert.equal(hostWarning('shop.example.com'), undefined);
});

test('a URL is described with its ASCII host and the warning, the rest as written; a plain URL as it is', () => {
  assert.equal(
    asciiUrl(`https://${LOOKALIKE}/spring?utm_source=x#top`),
    'https://shop.xn--exmple-4nf.com/spring?utm_source=x#top',
  );
  assert.equal(asciiUrl(`https://user@${LOOKALIKE}:8443/a`), 'https://user@shop.xn--exmple-4nf.com:8443/a');
  assert.equal(
    describeUrl(`https://${LOOKALIKE}/spring`),
    'https://shop.xn--exmple-4nf.com/spring (host shown as "shop.ex\u0430mple.com": mixed Latin and Cyrillic letters; looks like shop.example.com)',
  );
  assert.equal(describeUrl('https://shop.example.com/spring'), 'https://shop.example.com/spring');
  assert.equal(describeUrl('not a url'), 'not a url');
});

test('readHost gives every reading of a host at once; undefined for text that is no domain name', () => {
  const view = readHost(`https://${LOOKALIKE}/`);
  assert.equal(view?.ascii, 'shop.xn--exmple-4nf.com');
  assert.equal(view?.plain, false);
  assert.equal(view?.readsAs, 'shop.example.com');
  assert.equal(readHost('shop.example.com')?.plain, true);
  assert.equal(readHost('xn--zz.com'), undefined);
});

// ---- Properties ----

/** Latin letters with a Cyrillic twin that confusables.txt maps to them. */
const TWINS: Record<string, string> = {
  a: '\u0430',
  c: '\u0441',
  e: '\u0435',
  o: '\u043e',
  p: '\u0440',
  x: '\u0445',
};
const twinned = fc
  .tuple(
    fc.stringMatching(/^[a-z]{0,6}$/),
    fc.constantFrom(...Object.keys(TWINS)),
    fc.stringMatching(/^[a-z]{1,6}$/),
    fc.constantFrom('com', 'example', 'shop.example'),
  )
  .map(([before, letter, after, rest]) => ({
    latin: `${before}${letter}${after}.${rest}`,
    lookalike: `${before}${TWINS[letter]}${after}.${rest}`,
  }));

test('property: an ASCII domain name is its own ASCII form, single-script and described as it is', () => {
  fc.assert(
    fc.property(fc.domain(), (d) => {
      assert.equal(asciiHost(d), d.toLowerCase());
      assert.equal(mixedScriptLabel(d), undefined);
      assert.equal(describeHost(d), d.toLowerCase());
      assert.equal(describeUrl(`https://${d}/x`), `https://${d}/x`);
    }),
  );
});

test('property: a Latin letter swapped for its Cyrillic twin keeps the skeleton, changes the ASCII form, and mixes scripts', () => {
  fc.assert(
    fc.property(twinned, ({ latin, lookalike }) => {
      assert.equal(skeleton(lookalike), skeleton(latin));
      assert.notEqual(asciiHost(lookalike), asciiHost(latin));
      assert.equal(unicodeHost(asciiHost(lookalike) ?? ''), lookalike);
      assert.ok(mixedScriptLabel(lookalike), lookalike);
      const described = describeUrl(`https://${lookalike}/x`);
      // Never the Unicode form alone: the URL itself is in ASCII, the Unicode form only beside it.
      assert.match(described, /^https:\/\/[\x21-\x7e]+ \(host shown as "/);
      assert.ok(described.includes(`looks like ${latin}`), described);
    }),
  );
});

test('property: a host and its A-label have the same skeleton and the same description', () => {
  fc.assert(
    fc.property(twinned, ({ lookalike }) => {
      const ascii = asciiHost(lookalike) ?? '';
      assert.equal(skeleton(ascii), skeleton(lookalike));
      assert.equal(describeHost(ascii), describeHost(lookalike));
    }),
  );
});
