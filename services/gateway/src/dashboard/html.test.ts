import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { esc } from './html.ts';

describe('esc: what a person reads is what the text holds', () => {
  test('a bidi override, an isolate, zero-width characters, BEL and ESC are shown as ⟨U+XXXX⟩, never raw', () => {
    assert.equal(
      esc('"\u202Edesuap\u202C" \u2066x\u2069 a\u200Bb\uFEFF \u0007\u001B'),
      '&quot;⟨U+202E⟩desuap⟨U+202C⟩&quot; ⟨U+2066⟩x⟨U+2069⟩ a⟨U+200B⟩b⟨U+FEFF⟩ ⟨U+0007⟩⟨U+001B⟩',
    );
  });

  test('a C1 control, a soft hyphen and a tag character beyond the BMP are shown too', () => {
    assert.equal(esc('\u0085\u00AD\u{E0041}'), '⟨U+0085⟩⟨U+00AD⟩⟨U+E0041⟩');
  });

  test('text that looks like a token cannot pass for one: its brackets are shown as code points', () => {
    assert.equal(esc('⟨U+202E⟩'), '⟨U+27E8⟩U+202E⟨U+27E9⟩');
  });

  test('newlines and tabs lay text out and are kept; letters of any script are left alone', () => {
    assert.equal(esc('a\n\tb שלום 🎉 <&>'), 'a\n\tb שלום 🎉 &lt;&amp;&gt;');
  });
});
