/**
 * The kinds of marketing item and the content each carries. The shape of each kind's data (its
 * fields, bounds and enumerations) is the save tool's input schema, checked at the gateway; the
 * service stores the data object as it arrives.
 */

export const KINDS = ['brand', 'brief', 'playbook', 'inspiration', 'batch', 'creative'] as const;
export type Kind = (typeof KINDS)[number];

/** An item's data: a JSON object in the shape of its kind. */
export type ItemData = Record<string, unknown>;
