/**
 * A change's body held to the platform body its prepare tool publishes (`platform-bodies.ts` in the
 * runtime): the same declaration, so a caller of PrepareChange other than the gateway (the admin
 * command, a worker, another service) meets the field bounds an agent does, in the same words.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { platformBodyOf } from '@adsmcp/runtime/platform-bodies';
import type { Issue } from '@adsmcp/runtime/schema';

/**
 * checkPlatformBody refuses `body` when it breaks the declared body of a change of `objectType`
 * with `effect`, naming each field as the tool does (`body.name`) and the rule it breaks. A change
 * whose effect sends no declared body (archive, pause, activate, a bulk job) passes.
 */
export function checkPlatformBody(objectType: string, effect: string, body: Record<string, unknown>): void {
  const declared = platformBodyOf(objectType, effect);
  if (declared === undefined) return;
  const issues: Issue[] = [];
  declared.check(body, 'body', issues);
  if (issues.length > 0) throw new InvalidArgumentError(issues.map((i) => i.message).join('; '));
}
