import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  blankRefusal,
  hasVisibleContent,
  hiddenCharacter,
  MAX_STACKED_MARKS,
  showHidden,
  showSpaces,
  stackedMarks,
  stackedMarksRefusal,
  textLength,
  withSpaceLegend,
} from './text.ts';

test('the first hidden character is named by its code point; emoji joiners and, in multi-line text, layout are not hidden', () => {
  assert.equal(hiddenCharacter('pa\u202Eused'), 'U+202E');
  assert.equal(hiddenCharacter('\uD800'), 'U+D800');
  assert.equal(hiddenCharacter('a\u2028b'), 'U+2028');
  assert.equal(hiddenCharacter('\u{1F469}\u200D\u{1F4BB}'), undefined);
  assert.equal(hiddenCharacter('one\ntwo'), 'U+000A');
  assert.equal(hiddenCharacter('one\r\n\ttwo', true), undefined);
});

test('text shows its hidden characters as tokens, and a literal token cannot pass for one', () => {
  assert.equal(showHidden('"\u202Edesuap\u202C" a\u200Bb'), '"⟨U+202E⟩desuap⟨U+202C⟩" a⟨U+200B⟩b');
  assert.equal(showHidden('⟨U+202E⟩'), '⟨U+27E8⟩U+202E⟨U+27E9⟩');
  assert.equal(showHidden('one\ntwo', true), 'one\ntwo');
  assert.equal(showHidden('one\ntwo'), 'one⟨U+000A⟩two');
  assert.equal(showHidden('\u{1F469}\u200D\u{1F4BB} x\u200Dy'), '\u{1F469}\u200D\u{1F4BB} x⟨U+200D⟩y');
});

test('characters that render as nothing are hidden too: variation selectors, the grapheme joiner, blank letters', () => {
  // What a reviewer could not tell from the text it was added to.
  assert.equal(hiddenCharacter('Spring sale\u034F\uFE00'), 'U+034F');
  assert.equal(hiddenCharacter('Spring sale\uFE00'), 'U+FE00');
  assert.equal(hiddenCharacter('a\u{E0100}'), 'U+E0100');
  assert.equal(hiddenCharacter('a\uFE0F'), 'U+FE0F', 'a presentation selector after a letter');
  for (const blank of ['\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800', '\u180E']) {
    assert.equal(
      hiddenCharacter(`x${blank}y`),
      `U+${(blank.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`,
    );
  }
  assert.equal(showHidden('sale\u034F\uFE00'), 'sale⟨U+034F⟩⟨U+FE00⟩');
  // Emoji keep their presentation selectors and joiners: ❤️, 1️⃣, ❤️‍🔥, ☺︎.
  for (const emoji of ['\u2764\uFE0F', '1\uFE0F\u20E3', '\u2764\uFE0F\u200D\u{1F525}', '\u263A\uFE0E']) {
    assert.equal(hiddenCharacter(`I ${emoji} it`), undefined, emoji);
    assert.equal(showHidden(emoji), emoji);
  }
});

test('visible content is more than white space, zero-width characters and blank letters', () => {
  assert.equal(hasVisibleContent('\u200B\u200B'), false);
  assert.equal(hasVisibleContent('\u3164 \u2800'), false);
  assert.equal(hasVisibleContent(' x'), true);
});

test('text length counts code points, as JSON Schema does: an emoji is one character', () => {
  assert.equal(textLength('😀'.repeat(30)), 30);
  assert.equal(textLength('abc'), 3);
  assert.equal(textLength(''), 0);
  assert.equal(textLength('\u{1F469}\u200D\u{1F4BB}'), 3);
});

test('emoji as Unicode defines them keep their selectors, joiners, skin tones and tag characters', () => {
  for (const emoji of [
    '\u2764\uFE0F', // ❤️
    '\u{1F44D}\uFE0F', // 👍️: a selector where the recommended set writes none
    '\u{1F44D}\u{1F3FD}', // 👍🏽
    '#\uFE0F\u20E3', // #️⃣
    '\u{1F469}\u200D\u{1F4BB}', // 👩‍💻
    '\u{1F469}\u{1F3FD}\u200D\u{1F4BB}', // 👩🏽‍💻: a joiner after a skin tone
    '\u{1F469}\u200D\u2764\uFE0F\u200D\u{1F468}', // 👩‍❤️‍👨
    '\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}', // the flag of Scotland
    '\u{1F1EB}\u{1F1F7}', // 🇫🇷
  ]) {
    assert.equal(hiddenCharacter(`Sale ${emoji} today`), undefined, JSON.stringify(emoji));
    assert.equal(showHidden(emoji), emoji);
  }
});

test('selectors, joiners and tags outside an emoji are refused: after a letter, a bare digit, a flag letter, a selector', () => {
  const cases: [string, string][] = [
    ['A\uFE0F', 'U+FE0F'],
    ['1\uFE0F sale', 'U+FE0F'], // a digit outside a keycap shows nothing different
    ['\u{1F1EB}\uFE0F', 'U+FE0F'],
    ['\u2764\uFE0F\uFE0F', 'U+FE0F'],
    ['\u{1F3FD}\uFE0F', 'U+FE0F'],
    ['a\u200D\u{1F525}', 'U+200D'],
    ['sale\u{E0067}\u{E007F}', 'U+E0067'],
    ['\u{1F3F4}\u{E0041}', 'U+E0041'],
  ];
  for (const [text, named] of cases) assert.equal(hiddenCharacter(text), named, JSON.stringify(text));
  assert.equal(showHidden('A\uFE0F \u2764\uFE0F'), 'A⟨U+FE0F⟩ \u2764\uFE0F');
});

/** Real text in scripts that stack marks, each as it is typed and decomposed (NFD). */
const REAL_PHRASES = [
  'Tiếng Việt có dấu', // Vietnamese: "ệ" is e, circumflex and dot below when decomposed
  'Giảm giá 50% – mua ngay hôm nay!',
  'नमस्ते दुनिया', // Hindi
  'कार्त्स्न्य', // Sanskrit: a conjunct of five consonants, four viramas
  'ภาษาไทย น้ำใจ ลดราคา', // Thai: a vowel and a tone mark on one consonant
  'בְּרֵאשִׁית בָּרָא אֱלֹהִים', // Hebrew with niqqud
  'בְּרֵאשִׁ֖ית', // and a cantillation mark
  'بِسْمِ ٱللَّهِ ٱلرَّحْمَٰنِ', // Arabic with harakat: shadda with a vowel
  'မြို့ ကြိုး', // Burmese: four marks on one consonant
  'བསྒྲུབས་པ། ཧཱུྃ', // Tibetan stacks
  'Ελληνικά ᾅδης', // polytonic Greek
  'Crème brûlée 1\uFE0F\u20E3 \u2764\uFE0F',
];

test('real text in scripts that stack marks passes: Vietnamese, Devanagari, Thai, Hebrew, Arabic, Burmese, Tibetan', () => {
  for (const phrase of REAL_PHRASES) {
    for (const form of [phrase, phrase.normalize('NFD'), phrase.normalize('NFC')]) {
      assert.equal(stackedMarks(form), undefined, JSON.stringify(form));
      assert.equal(stackedMarksRefusal('`title`', form), undefined);
      assert.equal(hasVisibleContent(form), true, form);
      assert.equal(hiddenCharacter(form), undefined, form);
    }
  }
});

test('more than 4 marks stacked on one character are refused, naming the field, the position and the rule', () => {
  const zalgo = `Sale${'\u0301\u0336\u0317\u035C\u0300\u0316\u0334\u0327\u0350'}!`;
  assert.equal(
    stackedMarksRefusal('`body.creative.title`', zalgo),
    '`body.creative.title` has 9 combining marks stacked on one character at position 4; at most 4 are accepted',
  );
  assert.deepEqual(stackedMarks(`e${'\u0301'.repeat(4)}`), undefined, 'four is the limit');
  assert.deepEqual(stackedMarks(`e${'\u0301'.repeat(5)}`), { position: 1, marks: 5 });
  assert.deepEqual(
    stackedMarks(`${'\u0301'.repeat(7)}x`),
    { position: 1, marks: 7 },
    'marks opening the text',
  );
  // Positions count characters (code points), so an emoji before is one.
  assert.deepEqual(stackedMarks(`😀 a${'\u0489'.repeat(6)}`), { position: 3, marks: 6 });
  // Marks spread over the characters of a word are not stacked.
  assert.equal(stackedMarks('e\u0301\u0302'.repeat(20)), undefined);
});

const COMBINING = fc.constantFrom(
  '\u0301',
  '\u0336',
  '\u0489',
  '\u05B0',
  '\u0E49',
  '\u093F',
  '\u20DD',
  '\u1DC0',
);
const BASE = fc.constantFrom('a', 'Z', 'क', 'ب', 'ก', 'א', '😀', ' ', '1');

test('property: a character carrying n marks in a row is refused exactly when n is more than 4, at its position', () => {
  fc.assert(
    fc.property(
      fc.string({ unit: fc.constantFrom('a', 'b', ' ', 'é', 'ж'), maxLength: 10 }),
      BASE,
      fc.array(COMBINING, { maxLength: 12 }),
      fc.string({ unit: fc.constantFrom('a', ' ', '.'), maxLength: 5 }),
      (before, base, marks, after) => {
        const text = `${before}${base}${marks.join('')}${after}`;
        const found = stackedMarks(text);
        if (marks.length > MAX_STACKED_MARKS) {
          assert.deepEqual(found, { position: textLength(before) + 1, marks: marks.length });
        } else {
          assert.equal(found, undefined);
        }
      },
    ),
  );
});

test('text made only of combining marks, spaces and blank letters shows nothing; one letter shows', () => {
  assert.equal(hasVisibleContent('\u0301\u0301'), false);
  assert.equal(hasVisibleContent(' \u0301 \u20DD\u093E'), false);
  assert.equal(hasVisibleContent('\u3164\u0301'), false);
  assert.equal(hasVisibleContent('e\u0301'), true);
  assert.equal(
    blankRefusal('`title`', '\u0301\u0301'),
    '`title` must contain a visible character, not only combining marks and white space',
  );
  assert.equal(
    blankRefusal('`title`', '   '),
    '`title` must contain a visible character, not only white space',
  );
  assert.equal(blankRefusal('`title`', 'Sale'), undefined);
  fc.assert(
    fc.property(
      fc.array(fc.oneof(COMBINING, fc.constantFrom(' ', '\u00A0', '\u3000'))),
      fc.nat(),
      (parts, at) => {
        const blank = parts.join('');
        assert.equal(hasVisibleContent(blank), false);
        const i = parts.length === 0 ? 0 : at % (parts.length + 1);
        assert.equal(hasVisibleContent([...parts.slice(0, i), 'x', ...parts.slice(i)].join('')), true);
      },
    ),
  );
});

test('leading, trailing and repeated spaces are shown as ␣, other space characters by code point', () => {
  assert.equal(showSpaces('Sale  now '), 'Sale␣␣now␣');
  assert.equal(showSpaces('Sale now'), 'Sale now', 'a single space between words stays');
  assert.equal(showSpaces(' Sale'), '␣Sale');
  assert.equal(showSpaces('   '), '␣␣␣');
  assert.equal(showSpaces('10\u00A0€ off'), '10⟨U+00A0⟩€ off');
  assert.equal(showSpaces('a\u2003b\tc'), 'a⟨U+2003⟩b⟨U+0009⟩c');
  assert.equal(showSpaces('a \u00A0b'), 'a␣⟨U+00A0⟩b');
  assert.equal(showSpaces('a ␣ b'), 'a ⟨U+2423⟩ b', 'a literal ␣ cannot pass for a space');
  assert.equal(showSpaces(''), '');
  assert.equal(showSpaces('one  \n  two\r\nthree ', true), 'one␣␣\n␣␣two\r\nthree␣');
  assert.equal(showSpaces('one\ntwo'), 'one\ntwo', 'line breaks are left to showHidden');
  // Composed with showHidden, a hidden character and the spaces around it are both shown.
  assert.equal(showSpaces(showHidden('a  \u202Eb ')), 'a␣␣⟨U+202E⟩b␣');
  assert.equal(withSpaceLegend('"Sale␣␣now␣"'), '"Sale␣␣now␣" (␣ is a space)');
  assert.equal(withSpaceLegend('"Sale now"'), '"Sale now"');
});

/** Reads shown text back: what a reviewer reading the tokens understands was sent. */
function readBack(shown: string): string {
  return shown
    .replaceAll('␣', ' ')
    .replace(/⟨U\+([0-9A-F]{4,6})⟩/g, (_, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)));
}

const SPACED_TEXT = fc.string({
  unit: fc.constantFrom(' ', ' ', ' ', '\u00A0', '\u2003', '\u3000', '\t', '␣', 'a', 'é', 'ж', '😀', '-'),
  maxLength: 30,
});

test('property: shown text has no space a page could collapse or drop, and reads back as the text sent', () => {
  fc.assert(
    fc.property(SPACED_TEXT, (text) => {
      const shown = showSpaces(text);
      assert.equal(readBack(shown), text, 'nothing is lost or made ambiguous');
      assert.doesNotMatch(shown, /^\s|\s$|\s\s/u, 'no leading, trailing or repeated space is left');
      assert.doesNotMatch(shown, /[^\S ]/u, 'no space character but U+0020 is left');
    }),
  );
  fc.assert(
    fc.property(fc.array(SPACED_TEXT, { maxLength: 4 }), (lines) => {
      const text = lines.join('\n');
      const shown = showSpaces(text, true);
      assert.equal(readBack(shown), text);
      for (const line of shown.split('\n')) assert.doesNotMatch(line, /^\s|\s$|\s\s/u);
    }),
  );
});
