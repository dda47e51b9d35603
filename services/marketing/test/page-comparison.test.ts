import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bodyChanges, CONTEXT_MAX, compareWithBaseline, EXCERPT_MAX } from '../src/domain/page-comparison.ts';
import { normaliseText, pageTextOf } from '../src/domain/page-text.ts';

test('the visible text leaves out scripts, styles, templates, hidden elements and the head, and keeps the title apart', () => {
  const page =
    pageTextOf(`<!doctype html><html><head><title> Big &amp; Small </title><meta name="x" content="meta">
    <style>body { color: red }</style><script>document.write("script")</script></head>
    <body><nav>Home</nav><p>First<b>bold</b></p><p>Second&nbsp;line</p>
    <template><p>template</p></template><noscript>noscript</noscript>
    <div hidden><p>hidden</p></div><span aria-hidden="true">aria</span><img hidden alt="img"><p>Last</p></body></html>`);
  assert.equal(page.title, 'big & small');
  assert.equal(page.text, 'home first bold second line last');
});

test('normalising folds case, compatibility forms and every run of whitespace', () => {
  assert.equal(normaliseText('  Ｆｕｌｌ\u00a0WIDTH\n\tText  '), 'full width text');
});

test('an unclosed or malformed document still yields its text', () => {
  assert.deepEqual(pageTextOf('<title>T</title><p>one<p>two<div>three'), {
    title: 't',
    text: 'one two three',
  });
});

test('each changed place is listed with the text just before it, in order', () => {
  const changes = bodyChanges('a b c d e f g', 'a x c d e f y');
  assert.deepEqual(changes, [
    { removed: 'b', added: 'x', context: 'a' },
    { removed: 'g', added: 'y', context: 'c d e f' },
  ]);
});

test('excerpts and context stay short, however large the change', () => {
  const before = `${'intro '.repeat(100)}${'old '.repeat(500)}`;
  const after = `${'intro '.repeat(100)}${'new '.repeat(500)}`;
  const [change] = bodyChanges(before, after);
  assert.ok(change);
  assert.ok(change.removed.length <= EXCERPT_MAX && change.added.length <= EXCERPT_MAX);
  assert.ok(change.context.length <= CONTEXT_MAX);
  assert.match(change.removed, /^old old/);
  assert.match(change.added, /^new new/);
});

test('a page compared with its own baseline is unchanged', () => {
  const page = pageTextOf('<title>Same</title><p>Same text</p>');
  const verdict = compareWithBaseline(page, { ...page, literals: null }, []);
  assert.equal(verdict.outcome, 'unchanged');
  assert.deepEqual(verdict.bodyChanges, []);
});

test('excerpts, context and the kept title count characters (code points) and never cut an emoji in half', () => {
  const emoji = '🌱'.repeat(500);
  const [change] = bodyChanges(`${emoji} old`, `${emoji} new ${emoji}`);
  assert.ok(change);
  const count = (s: string) => [...s].length;
  assert.equal(count(change.context), CONTEXT_MAX);
  assert.equal(count(change.added), EXCERPT_MAX);
  const halfOfAPair = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  for (const text of [change.context, change.added, change.removed]) assert.doesNotMatch(text, halfOfAPair);
  const page = pageTextOf(`<title>${'😀'.repeat(400)}</title><p>x</p>`);
  assert.equal(count(page.title), 300);
  assert.equal(page.title, '😀'.repeat(300));
});
