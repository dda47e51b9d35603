import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasVisibleContent, hiddenCharacter, showHidden, textLength } from './text.ts';

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
