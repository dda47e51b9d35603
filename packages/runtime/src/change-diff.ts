/**
 * What a change sets, field by field, against the object as it was: the one diff behind both a
 * change's summary and the dashboard's review table, so that what a person reads and what they
 * are shown agree.
 */

/** Each field the operation sets, with the value it had when the change was prepared. */
export function diffRows(
  before: unknown,
  body: unknown,
  prefix = '',
): { field: string; before: unknown; after: unknown }[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  const rows: { field: string; before: unknown; after: unknown }[] = [];
  const was = (typeof before === 'object' && before !== null ? before : {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(body)) {
    const field = `${prefix}${k}`;
    if (
      typeof v === 'object' &&
      v !== null &&
      !Array.isArray(v) &&
      typeof was[k] === 'object' &&
      was[k] !== null
    ) {
      rows.push(...diffRows(was[k], v, `${field}.`));
    } else {
      rows.push({ field, before: was[k], after: v });
    }
  }
  return rows;
}

function show(v: unknown): string {
  return v === undefined ? '(unset)' : JSON.stringify(v);
}

/** "name "A" → "B"": each field of `diffRows`, as a line of a summary. */
export function describeDiff(before: unknown, body: unknown): string[] {
  return diffRows(before, body).map((r) => `${r.field} ${show(r.before)} → ${show(r.after)}`);
}

/** The status an action on an object (`/{collection}/{id}/{action}`) sets, whatever its body. */
const STATUS_ACTIONS: Record<string, string> = {
  archive: 'archived',
  pause: 'paused',
  activate: 'active',
};

function statusSetBy(operationPath: string): string | undefined {
  const segments = operationPath.split('/').slice(1);
  const action = segments[2];
  return segments.length === 3 && action !== undefined && Object.hasOwn(STATUS_ACTIONS, action)
    ? STATUS_ACTIONS[action]
    : undefined;
}

/**
 * The rows of a change's review: an archive, pause or activate sets `status` whatever its body;
 * any other operation sets each field of its body.
 */
export function changeRows(
  operationPath: string,
  before: unknown,
  body: unknown,
): { field: string; before: unknown; after: unknown }[] {
  const status = statusSetBy(operationPath);
  if (status !== undefined) {
    const was = typeof before === 'object' && before !== null ? (before as { status?: unknown }) : {};
    return [{ field: 'status', before: was.status, after: status }];
  }
  return diffRows(before, body);
}
