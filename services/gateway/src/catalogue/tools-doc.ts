/**
 * The tool reference (docs/tools.md), written from the catalogue itself so that it cannot drift
 * from what `tools/list` serves: `npm run docs` writes it, and a test fails when it is stale.
 */
import { behaviorName, type Catalogue, requiredAccess, type ToolDefinition } from './catalogue.ts';
import type { JsonSchema } from './schema.ts';

type Props = Record<string, JsonSchema>;

/** A JSON Schema as a short phrase: `string, 3 to 1000 chars`, `one of: a, b`. */
function describeType(s: JsonSchema): string {
  if (Array.isArray(s.enum)) return `one of: ${(s.enum as string[]).map((v) => `\`${v}\``).join(', ')}`;
  if (Array.isArray(s.anyOf)) {
    return (s.anyOf as JsonSchema[])
      .map((a) => (a.type === 'null' ? 'null' : typeof a.title === 'string' ? a.title : describeType(a)))
      .join(' or ');
  }
  const rules: string[] = [];
  const range = (lo: unknown, hi: unknown, unit: string) => {
    if (lo !== undefined && hi !== undefined) rules.push(`${lo} to ${hi}${unit}`);
    else if (lo !== undefined) rules.push(`at least ${lo}${unit}`);
    else if (hi !== undefined) rules.push(`at most ${hi}${unit}`);
  };
  switch (s.type) {
    case 'string':
      range(s.minLength, s.maxLength, ' chars');
      if (typeof s.format === 'string')
        rules.push(s.format === 'uri' ? `URL matching \`${s.pattern}\`` : s.format);
      else if (s.pattern === '\\S') rules.push('with a visible character');
      else if (typeof s.pattern === 'string') rules.push(`matching \`${s.pattern}\``);
      break;
    case 'integer':
    case 'number':
      if (s.exclusiveMinimum !== undefined) rules.push(`greater than ${s.exclusiveMinimum}`);
      range(s.minimum, s.maximum, '');
      break;
    case 'array':
      range(s.minItems, s.maxItems, ' items');
      if (s.uniqueItems === true) rules.push('unique');
      return `array of (${describeType((s.items as JsonSchema) ?? {})})${rules.length ? `, ${rules.join(', ')}` : ''}`;
  }
  return [String(s.type ?? 'any'), ...rules].join(', ');
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

const hasFields = (s: JsonSchema | undefined): boolean =>
  s !== undefined && s.type === 'object' && s.properties !== undefined;

/**
 * The object whose fields a value's rows list, and how their paths continue: the value itself
 * (`body.name`), the object of a nullable value (`body.product_set.filters`), or each item of an
 * array of objects (`body.product_set.filters[].operator`).
 */
function fieldsInside(s: JsonSchema, path: string): { schema: JsonSchema; prefix: string } | undefined {
  if (hasFields(s)) return { schema: s, prefix: `${path}.` };
  const alternative = Array.isArray(s.anyOf) ? (s.anyOf as JsonSchema[]).find(hasFields) : undefined;
  if (alternative !== undefined) return fieldsInside(alternative, path);
  const items = s.type === 'array' ? (s.items as JsonSchema | undefined) : undefined;
  if (items !== undefined && hasFields(items)) return { schema: items, prefix: `${path}[].` };
  return undefined;
}

/**
 * The argument rows of an object schema, nested objects flattened as `body.name` (through
 * nullable objects and arrays of objects, whose item fields are `list[].name`).
 */
function argumentRows(schema: JsonSchema, prefix = ''): string[] {
  const props = (schema.properties ?? {}) as Props;
  const required = new Set((schema.required ?? []) as string[]);
  const rows: string[] = [];
  for (const [name, s] of Object.entries(props)) {
    const path = `${prefix}${name}`;
    const what = s.type === 'object' ? 'object' : describeType(s);
    const about = typeof s.description === 'string' ? s.description : '';
    rows.push(`| \`${path}\` | ${cell(what)} | ${required.has(name) ? 'yes' : ''} | ${cell(about)} |`);
    const inside = fieldsInside(s, path);
    if (inside !== undefined) rows.push(...argumentRows(inside.schema, inside.prefix));
  }
  return rows;
}

function resultFields(schema: JsonSchema): string {
  const props = Object.keys((schema.properties ?? {}) as Props);
  return props.length === 0 ? 'an object' : props.map((p) => `\`${p}\``).join(', ');
}

function toolSection<D>(t: ToolDefinition<D>): string {
  const access =
    t.access === 'any-credential'
      ? 'any valid credential'
      : `scope \`${requiredAccess(t.behavior).scope}\`, roles ${requiredAccess(t.behavior).roles.join(', ')}`;
  const args = argumentRows(t.input.json);
  return [
    `### \`${t.name}\` — ${t.title}`,
    '',
    `${behaviorName(t.behavior)} · ${access}${t.features.length ? ` · needs the ${t.features.join(', ')} feature` : ''} · routes to \`${t.routesTo}\``,
    '',
    t.description,
    '',
    ...(args.length === 0
      ? ['No arguments.']
      : ['| argument | type and rules | required | about |', '|---|---|---|---|', ...args]),
    '',
    'Example arguments:',
    '',
    '```json',
    JSON.stringify(t.example),
    '```',
    '',
    `Result: ${resultFields(t.output)}; an error result is \`{"error": {"code", "message", ...}}\` with \`isError: true\`.`,
    '',
  ].join('\n');
}

/** renderToolReference is the whole of docs/tools.md. */
export function renderToolReference<D>(catalogue: Catalogue<D>): string {
  const tools = [...catalogue.byName.values()];
  const groups = [...new Set(tools.map((t) => t.group))];
  const out = [
    '# Tool reference',
    '',
    '<!-- Generated from the tool catalogue by `npm run docs`; a test fails when it is out of date. -->',
    '',
    `${tools.length} tools. Every tool is called with \`tools/call\` at \`POST /mcp\`; its result is in ` +
      '`structuredContent` and, as JSON text, in `content`. `GET /catalogue.json` serves the same ' +
      'catalogue as JSON, with each input and output schema.',
    '',
    '| tool | behaviour | group |',
    '|---|---|---|',
    ...tools.map(
      (t) =>
        `| [\`${t.name}\`](#${t.name}--${t.title
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-')}) | ${behaviorName(t.behavior)} | ${t.group} |`,
    ),
    '',
  ];
  for (const g of groups) {
    out.push(`## ${g}`, '');
    for (const t of tools.filter((x) => x.group === g)) out.push(toolSection(t));
  }
  return `${out.join('\n').trimEnd()}\n`;
}
