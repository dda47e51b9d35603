/**
 * XLSX files written part by part, for what a spreadsheet app may write and write-excel-file does
 * not: formulas with or without their computed values, error cells, shared strings in another
 * encoding, empty formatted rows. Each sheet is a tab of the workbook, its rows from row 1.
 */
import { strToU8, zipSync } from 'fflate';

/**
 * A cell: text (an inline string), a number, nothing, or a cell written as given: `attributes` on
 * its `<c>` (such as ` t="e"`) and the XML inside it (such as `<f>1/0</f><v>#DIV/0!</v>`).
 */
export type PartCell = string | number | null | { attributes?: string; inner: string };

export interface PartSheet {
  name: string;
  rows: readonly (readonly PartCell[])[];
  /** Empty rows after the last, formatted (a height of their own), as spreadsheet apps write them. */
  emptyRowsAfter?: number;
  /** The tab's visibility, as the workbook part states it (absent: visible). */
  state?: 'hidden' | 'veryHidden';
  /** Rows hidden in the sheet (`<row hidden="1">`), numbered from 1. */
  hiddenRows?: readonly number[];
  /** Columns hidden in the sheet (`<col hidden="1">`), numbered from 1 (A is 1). */
  hiddenColumns?: readonly number[];
}

const xmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const NS = 'http://schemas.openxmlformats.org';
const REL = `${NS}/officeDocument/2006/relationships`;

function columnLetter(index: number): string {
  let name = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26))
    name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}

function cellXml(cell: PartCell, ref: string): string {
  if (cell === null) return '';
  if (typeof cell === 'number') return `<c r="${ref}"><v>${cell}</v></c>`;
  if (typeof cell === 'string')
    return `<c r="${ref}" t="inlineStr"><is><t xml:space="preserve">${xmlText(cell)}</t></is></c>`;
  return `<c r="${ref}"${cell.attributes ?? ''}>${cell.inner}</c>`;
}

/** The worksheet XML of `sheet`. */
export function worksheetXml(sheet: PartSheet): string {
  const hidden = (r: number) => (sheet.hiddenRows?.includes(r) ? ' hidden="1"' : '');
  const rows = sheet.rows.map(
    (cells, r) =>
      `<row r="${r + 1}"${hidden(r + 1)}>${cells.map((c, i) => cellXml(c, `${columnLetter(i)}${r + 1}`)).join('')}</row>`,
  );
  for (let k = 1; k <= (sheet.emptyRowsAfter ?? 0); k++)
    rows.push(`<row r="${sheet.rows.length + k}" ht="15" customHeight="1"/>`);
  const columns = (sheet.hiddenColumns ?? []).map((c) => `<col min="${c}" max="${c}" width="0" hidden="1"/>`);
  const cols = columns.length === 0 ? '' : `<cols>${columns.join('')}</cols>`;
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="${NS}/spreadsheetml/2006/main">${cols}<sheetData>${rows.join('')}</sheetData></worksheet>`;
}

/**
 * xlsxFile writes a workbook of `sheets`; `parts` adds or replaces entries of the archive
 * (xl/sharedStrings.xml given here is linked from the workbook).
 */
export function xlsxFile(
  sheets: readonly PartSheet[],
  parts: Record<string, string | Uint8Array> = {},
): Uint8Array {
  const shared = parts['xl/sharedStrings.xml'] !== undefined;
  const files: Record<string, string | Uint8Array> = {
    '[Content_Types].xml': `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="${NS}/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/></Types>`,
    '_rels/.rels': `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="${NS}/package/2006/relationships"><Relationship Id="rId1" Type="${REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    'xl/workbook.xml': `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="${NS}/spreadsheetml/2006/main" xmlns:r="${REL}"><sheets>${sheets
      .map(
        (s, i) =>
          `<sheet name="${xmlText(s.name)}" sheetId="${i + 1}"${s.state ? ` state="${s.state}"` : ''} r:id="rId${i + 1}"/>`,
      )
      .join('')}</sheets></workbook>`,
    'xl/_rels/workbook.xml.rels': `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="${NS}/package/2006/relationships">${sheets
      .map(
        (_, i) =>
          `<Relationship Id="rId${i + 1}" Type="${REL}/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`,
      )
      .join(
        '',
      )}${shared ? `<Relationship Id="rIdS" Type="${REL}/sharedStrings" Target="sharedStrings.xml"/>` : ''}</Relationships>`,
  };
  sheets.forEach((s, i) => {
    files[`xl/worksheets/sheet${i + 1}.xml`] = worksheetXml(s);
  });
  Object.assign(files, parts);
  return zipSync(
    Object.fromEntries(
      Object.entries(files).map(([name, data]) => [name, typeof data === 'string' ? strToU8(data) : data]),
    ),
  );
}

/** A shared-strings part of one string, `text` as bytes after `declaration` (an XML declaration or ''). */
export function sharedStringsPart(declaration: string, text: Uint8Array): Uint8Array {
  return new Uint8Array(
    Buffer.concat([
      Buffer.from(`${declaration}<sst xmlns="${NS}/spreadsheetml/2006/main"><si><t>`),
      text,
      Buffer.from('</t></si></sst>'),
    ]),
  );
}
