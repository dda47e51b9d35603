/**
 * The rules of conversion tracking the platform keeps beyond each field's own bounds: which event
 * types it counts, when a custom event name belongs, the attribution windows it offers, and how
 * many pixels one setting may count.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';

type Fields = Record<string, unknown>;

export const EVENT_TYPES = [
  'page_visit',
  'view_content',
  'search',
  'add_to_cart',
  'add_to_wishlist',
  'purchase',
  'lead',
  'sign_up',
  'custom',
] as const;
export const ATTRIBUTION_WINDOW_DAYS = [1, 7, 28] as const;
export const MAX_SOURCE_IDS = 20;

/** A pixel has no rules beyond its fields' bounds, which the gateway checks. */
export function checkConversionSource(_source: Fields): void {}

/** checkEventSetting refuses a setting the platform would refuse, naming the field and the rule. */
export function checkEventSetting(setting: Fields): void {
  const type = setting.event_type;
  if (!(EVENT_TYPES as readonly unknown[]).includes(type)) {
    throw new InvalidArgumentError(
      `\`body.event_type\` must be one of ${EVENT_TYPES.join(', ')} (got ${JSON.stringify(type)})`,
    );
  }
  if (type === 'custom' && setting.custom_event_name === undefined) {
    throw new InvalidArgumentError('`body.custom_event_name` is required when event_type is "custom"');
  }
  if (type !== 'custom' && setting.custom_event_name !== undefined) {
    throw new InvalidArgumentError(
      `\`body.custom_event_name\` is only for event_type "custom" (got event_type ${JSON.stringify(type)})`,
    );
  }
  if (!(ATTRIBUTION_WINDOW_DAYS as readonly unknown[]).includes(setting.attribution_window_days)) {
    throw new InvalidArgumentError(
      `\`body.attribution_window_days\` must be ${ATTRIBUTION_WINDOW_DAYS.join(', ')} days (got ${JSON.stringify(setting.attribution_window_days)})`,
    );
  }
  const ids = Array.isArray(setting.source_ids) ? setting.source_ids : [];
  if (ids.length === 0 || ids.length > MAX_SOURCE_IDS) {
    throw new InvalidArgumentError(
      `\`body.source_ids\` must name 1 to ${MAX_SOURCE_IDS} pixels (got ${ids.length})`,
    );
  }
  const repeated = ids.findIndex((id, i) => ids.indexOf(id) !== i);
  if (repeated !== -1) {
    throw new InvalidArgumentError(
      `\`body.source_ids[${repeated}]\` repeats ${JSON.stringify(ids[repeated])}; each pixel once`,
    );
  }
}
