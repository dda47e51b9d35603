/**
 * The field rules of every request, as its proto states them (`buf.validate` options, the
 * protovalidate rules), checked by the server for every call before the handler runs, whoever the
 * caller is: the gateway, the operator's command, a worker of another service. A request that
 * breaks one is refused as InvalidArgument naming the field and the rule in the words the gateway
 * uses for tool arguments ("`limit` must be an integer from 1 to 100 (got 500)").
 */
import { type FieldRules, field as fieldRulesOption } from '@adsmcp/proto/buf/validate/validate_pb';
import {
  create,
  type DescField,
  type DescMessage,
  getOption,
  hasOption,
  type Message,
} from '@bufbuild/protobuf';
import { type Path, pathToString } from '@bufbuild/protobuf/reflect';
import { createValidator, type Violation } from '@bufbuild/protovalidate';
import { FailedPreconditionError, InvalidArgumentError } from './errors.ts';

const validator = createValidator();

/**
 * checkRulesCompile validates an empty request of `schema`, so that a rule the library cannot
 * compile (a mistake in a proto) stops the service at start-up instead of failing its calls.
 */
export function checkRulesCompile(schema: DescMessage): void {
  const result = validator.validate(schema, create(schema));
  if (result.kind === 'error')
    throw new Error(`the field rules of ${schema.typeName} do not compile: ${result.error.message}`);
}

/**
 * validateRequest refuses a request that carries a field this release does not know
 * (FailedPrecondition) or breaks a rule of its proto (InvalidArgument).
 */
export function validateRequest(schema: DescMessage, message: Message): void {
  refuseUnknownFields(schema, message);
  const result = validator.validate(schema, message);
  if (result.kind === 'valid') return;
  if (result.kind === 'error') throw result.error;
  throw new InvalidArgumentError(result.violations.map((v) => describe(v, message)).join('; '));
}

/** The field a violation is about and its value, read from the request along the path. */
function located(path: Path, message: Message): { field?: DescField; item: boolean; value: unknown } {
  let value: unknown = message;
  let field: DescField | undefined;
  let item = false;
  for (const step of path) {
    if (step.kind === 'field') {
      field = step;
      item = false;
      value = (value as Record<string, unknown> | undefined)?.[step.localName];
    } else if (step.kind === 'list_sub') {
      item = true;
      value = (value as unknown[] | undefined)?.[step.index];
    }
  }
  return { ...(field === undefined ? {} : { field }), item, value };
}

/** The rules that apply to the violated value: its field's, or its items' for a list item. */
function rulesOf(field: DescField | undefined, item: boolean): FieldRules | undefined {
  if (field === undefined || !hasOption(field, fieldRulesOption)) return undefined;
  const rules = getOption(field, fieldRulesOption);
  if (!item) return rules;
  return rules.type.case === 'repeated' ? rules.type.value.items : undefined;
}

/** A value as a refusal shows it: text quoted and cut at 40 characters, numbers as they are. */
function show(value: unknown): string {
  if (typeof value !== 'string') return String(value);
  const chars = [...value];
  return JSON.stringify(chars.length > 40 ? `${chars.slice(0, 40).join('')}…` : value);
}

/** A length bound in words; an unset bound reads as 0 (proto2 defaults), which bounds nothing. */
function lengthRule(min: bigint, max: bigint, unit: string): string {
  if (min > 0n && max > 0n) return min === max ? `exactly ${min} ${unit}` : `${min} to ${max} ${unit}`;
  if (min > 0n) return `at least ${min} ${unit}`;
  return `at most ${max} ${unit}`;
}

/** A numeric range in the gateway's words: "from 1 to 100", "greater than 0 and at most 10". */
function rangeWords(r: {
  lessThan: { case: 'lt' | 'lte' | undefined; value?: number | bigint };
  greaterThan: { case: 'gt' | 'gte' | undefined; value?: number | bigint };
}): string {
  const lower = r.greaterThan.case === undefined ? undefined : r.greaterThan;
  const upper = r.lessThan.case === undefined ? undefined : r.lessThan;
  const top = upper === undefined ? '' : `${upper.case === 'lt' ? 'less than' : 'at most'} ${upper.value}`;
  if (lower?.case === 'gte' && upper?.case === 'lte') return `from ${lower.value} to ${upper.value}`;
  if (lower === undefined) return upper?.case === 'lte' ? `of at most ${upper.value}` : top;
  const bottom = lower.case === 'gt' ? `greater than ${lower.value}` : `of at least ${lower.value}`;
  return top === '' ? bottom : `${bottom} and ${top}`;
}

/**
 * describe words one violation as the gateway words a tool argument's: the field's path, what it
 * must be, and what it was. A rule this file has no words for keeps the library's message.
 */
function describe(v: Violation, message: Message): string {
  const path = v.field.length === 0 ? 'request' : `\`${pathToString(v.field)}\``;
  const { field, item, value } = located(v.field, message);
  const rules = rulesOf(field, item)?.type;
  const got = ` (got ${show(value)})`;
  if (v.ruleId === 'required') return `${path} is required`;
  switch (rules?.case) {
    case 'int32':
    case 'int64':
      return `${path} must be an integer ${rangeWords(rules.value)}${got}`;
    case 'double':
      return v.ruleId === 'double.finite'
        ? `${path} must be a finite number${got}`
        : `${path} must be a number ${rangeWords(rules.value)}${got}`;
    case 'string': {
      const s = rules.value;
      if (v.ruleId.startsWith('string.uuid')) return `${path} must be a UUID${got}`;
      if (v.ruleId === 'string.in') return `${path} must be one of ${s.in.join(', ')}${got}`;
      if (v.ruleId === 'string.pattern') return `${path} must match ${s.pattern}${got}`;
      if (v.ruleId.endsWith('_len'))
        return `${path} must be ${lengthRule(s.minLen, s.maxLen, 'characters')} (got ${[...String(value)].length})`;
      break;
    }
    case 'repeated': {
      const r = rules.value;
      const list = Array.isArray(value) ? value : [];
      if (v.ruleId === 'repeated.unique') {
        const first = list.findIndex((x, i) => list.indexOf(x) !== i);
        return `\`${pathToString(v.field)}[${first}]\` repeats an earlier item; items must be unique`;
      }
      if (v.ruleId.endsWith('_items'))
        return `${path} must have ${lengthRule(r.minItems, r.maxItems, 'items')} (got ${list.length})`;
      break;
    }
  }
  return `${path} ${v.message}`;
}

/**
 * A field number the request's message does not declare comes from a caller of another release:
 * a field this release reserved (a status filter moved to an enum at a new number) or one added
 * after it. Ignored, as protobuf would, it would change what the request asks for without a word
 * (an old filter dropped lists everything), so the request is refused, naming the fields, and
 * nothing is done. Nested messages are checked too.
 */
function refuseUnknownFields(schema: DescMessage, message: Message): void {
  const unknown: string[] = [];
  collectUnknown(schema, message, schema.name, unknown);
  if (unknown.length > 0)
    throw new FailedPreconditionError(
      `the request carries ${unknown.join(', ')}, which this release of the service does not know: ` +
        'the caller is of another release; nothing was done',
    );
}

function collectUnknown(schema: DescMessage, message: Message, at: string, out: string[]): void {
  // A well-known type may stand as a plain value (a Struct is a JSON object, whose keys are data).
  if (schema.typeName.startsWith('google.protobuf.')) return;
  const fields: unknown = (message as { $unknown?: unknown }).$unknown;
  if (Array.isArray(fields)) for (const f of fields as { no: number }[]) out.push(`field ${f.no} of ${at}`);
  for (const field of schema.fields) {
    const value = (message as unknown as Record<string, unknown>)[field.localName];
    if (field.fieldKind === 'message' && value !== undefined)
      collectUnknown(field.message, value as Message, `${at}.${field.name}`, out);
    else if (field.fieldKind === 'list' && field.listKind === 'message')
      (value as Message[]).forEach((item, i) => {
        collectUnknown(field.message, item, `${at}.${field.name}[${i}]`, out);
      });
  }
}
