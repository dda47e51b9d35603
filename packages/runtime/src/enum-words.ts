/**
 * The words of protobuf enums. Tools' JSON, the dashboard and stored rows name an enum value by a
 * word: its name without the prefix every value of the enum shares, in lower case
 * (CHANGE_RESOLUTION_NOT_APPLIED of ChangeResolution is `not_applied`). One rule, read from the
 * enum's descriptor, both ways: a value added to a proto has its word with no table to update.
 */
import type { DescEnum } from '@bufbuild/protobuf';

function wordOf(desc: DescEnum, name: string): string {
  const lower = name.toLowerCase();
  const prefix = desc.sharedPrefix ?? '';
  return lower.startsWith(prefix) ? lower.slice(prefix.length) : lower;
}

/**
 * The word of `value`, or null for the zero value (UNSPECIFIED: nothing was set). A number the
 * enum does not declare (a newer writer's value) is refused: shown as anything, it would mislead.
 */
export function enumWord(desc: DescEnum, value: number): string | null {
  if (value === 0) return null;
  const v = desc.value[value];
  if (v === undefined) throw new Error(`${desc.typeName} has no value ${value}`);
  return wordOf(desc, v.name);
}

/** The words of every value but the zero one, in declaration order (for a schema's `enum`). */
export function enumWords(desc: DescEnum): string[] {
  return desc.values.filter((v) => v.number !== 0).map((v) => wordOf(desc, v.name));
}

/**
 * The value named by `word`. The words come from the writer's own code (a row's status), so a
 * word the enum lacks is a bug between the code and its proto, refused loudly rather than sent as
 * UNSPECIFIED.
 */
export function enumValue(desc: DescEnum, word: string): number {
  const v = desc.values.find((x) => x.number !== 0 && wordOf(desc, x.name) === word);
  if (v === undefined) {
    throw new Error(
      `${desc.typeName} has no value for the word ${JSON.stringify(word)} (its words: ${enumWords(desc).join(', ')})`,
    );
  }
  return v.number;
}
