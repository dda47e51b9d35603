import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeXmlText, forEachTag, textAt } from './workbook-xml.ts';

const tags = (xml: string) => {
  const out: string[] = [];
  forEachTag(xml, (t) => {
    out.push(`${t.closing ? '/' : ''}${t.name}${t.selfClosing ? '/' : ''} ${JSON.stringify(t.attributes())}`);
  });
  return out;
};

test('tags are read with local names and decoded attributes; comments, CDATA and declarations skipped', () => {
  assert.deepEqual(
    tags(
      '<?xml version="1.0"?><!-- <c r="Z9"> --><x:sheet xmlns:r="ns" name="A &amp; B&gt;C" r:id=\'rId1\'/>' +
        '<c r="A1" t="e"><v><![CDATA[<v>]]></v></c>',
    ),
    ['sheet/ {"name":"A & B>C","id":"rId1"}', 'c {"r":"A1","t":"e"}', 'v {}', '/v {}', '/c {}'],
  );
  // A quoted value may hold a ">".
  assert.deepEqual(tags('<sheet name="a>b"/>'), ['sheet/ {"name":"a>b"}']);
  assert.equal(decodeXmlText('&#233;&#x1F600;&lt;&unknown;'), 'é😀<&unknown;');
  const xml = '<v>#N/A</v>';
  forEachTag(xml, (t) => {
    if (t.name === 'v' && !t.closing) assert.equal(textAt(xml, t.end), '#N/A');
  });
});

test('a hostile text is read in one pass: tags that never end, and quotes that never close', () => {
  const big = 8 * 1024 * 1024;
  for (const text of [
    '<c'.repeat(big / 2),
    `<c a="${'<'.repeat(big)}`,
    `<c ${'a'.repeat(big)}>`,
    '<'.repeat(big),
  ]) {
    const started = performance.now();
    let seen = 0;
    forEachTag(text, (t) => {
      seen += 1;
      t.attributes();
    });
    assert.ok(seen <= 1);
    assert.ok(performance.now() - started < 2000, `took ${performance.now() - started} ms`);
  }
});
