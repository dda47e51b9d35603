import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { emptyStateHtml, esc, labelCells } from './html.ts';

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

describe('labelCells: a table with a header row can be read as cards', () => {
  test('each body cell is given its column name, and the table is marked for cards', () => {
    const html = labelCells(
      '<table id="t"><thead><tr><th>Status</th><th>Ad <span>account</span></th><th></th></tr></thead><tbody><tr><td>prepared</td><td>Demo</td><td><a href="/x">Review</a></td></tr></tbody></table>',
    );
    assert.equal(
      html,
      '<table data-cards id="t"><thead><tr><th>Status</th><th>Ad <span>account</span></th><th></th></tr></thead><tbody><tr><td data-label="Status">prepared</td><td data-label="Ad account">Demo</td><td><a href="/x">Review</a></td></tr></tbody></table>',
    );
  });

  test('a row that starts with its own header cell keeps each data cell under its own column', () => {
    assert.equal(
      labelCells(
        '<table><thead><tr><th></th><th>Now</th><th>Proposed</th></tr></thead><tbody><tr><th>Title</th><td>Sale</td><td>Sale 20%</td></tr></tbody></table>',
      ),
      '<table data-cards><thead><tr><th></th><th>Now</th><th>Proposed</th></tr></thead><tbody><tr><th>Title</th><td data-label="Now">Sale</td><td data-label="Proposed">Sale 20%</td></tr></tbody></table>',
    );
  });

  test('a table without a header row, and one holding another table, are left as they are', () => {
    const facts = '<table><tr><th>Currency</th><td>EUR</td></tr></table>';
    assert.equal(labelCells(facts), facts);
    const nested = `<table><thead><tr><th>A</th></tr></thead><tbody><tr><td>${facts}</td></tr></tbody></table>`;
    assert.equal(labelCells(nested), nested);
  });
});

describe('emptyStateHtml: an empty list says what is filtered', () => {
  test('the filters that are set are named, with a link that clears them', () => {
    assert.equal(
      emptyStateHtml(
        'changes',
        [
          ['status', 'rejected'],
          ['ad account', ''],
        ],
        '/dashboard/changes',
      ),
      '<p class="empty" role="status">No changes match these filters: status <strong>rejected</strong>. <a href="/dashboard/changes">Clear the filters</a></p>',
    );
    assert.equal(
      emptyStateHtml('changes', [['status', '']], '/x'),
      '<p class="empty" role="status">No changes yet.</p>',
    );
  });
});
