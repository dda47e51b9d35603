/**
 * The person in the loop, reached through the MCP client: when ads_apply_change is called for a
 * change that still awaits a person's decision, a client that declared URL elicitation is asked to
 * open the change's review page — on 2026-07-28 as an `input_required` result carrying a URL-mode
 * elicitation, whose retry applies the change once the person approved it; on the 2025-era
 * revisions as the URL elicitation required error (-32042). Any other client gets the tool error,
 * which names the review page (review_url). Approval itself happens only in the dashboard (or
 * `admin approve`): the URL carries no credential, and the client's answer to the elicitation
 * decides nothing; the retry applies the change only when the changes service says it is approved.
 */
import { isRecord } from '@adsmcp/runtime/json';
import {
  CLIENT_CAPABILITIES_META_KEY,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/server';
import { awaitingPerson } from '../catalogue/tools/change-tools.ts';
import type { ToolResult } from './tool-call.ts';

/** The key of the review page's elicitation among a 2026-07-28 result's input requests. */
export const REVIEW_INPUT_KEY = 'review';

/** The tool whose call may wait for a person. */
export const APPLY_TOOL = 'ads_apply_change';

/** Whether a client's capabilities (as declared in initialize, or in a request's `_meta`) include URL elicitation. */
export function declaresUrlElicitation(capabilities: unknown): boolean {
  return (
    isRecord(capabilities) && isRecord(capabilities.elicitation) && isRecord(capabilities.elicitation.url)
  );
}

/** The client capabilities a 2026-07-28 request declares in its `_meta` (or the envelope the SDK took from it). */
export function requestCapabilities(meta: unknown): unknown {
  return isRecord(meta) ? meta[CLIENT_CAPABILITIES_META_KEY] : undefined;
}

function message(changeId: string): string {
  return (
    `Change ${changeId} awaits a person's decision. Open its review page, signed in to the dashboard, ` +
    'to approve or reject it; the change is applied when this call is retried after it was approved.'
  );
}

/**
 * What a 2026-07-28 client is answered for `result` of a call of `tool`: the review page as a
 * URL elicitation when the change awaits a person and the client declared URL elicitation and did
 * not decline the page already on this call; else the result as it is.
 */
export function modernAnswer(
  tool: string,
  result: ToolResult,
  meta: unknown,
  inputResponses: unknown,
): ToolResult | InputRequiredResult {
  if (tool !== APPLY_TOOL) return result;
  const pending = awaitingPerson(result);
  if (pending === undefined || !declaresUrlElicitation(requestCapabilities(meta))) return result;
  // A person who declined or dismissed the page is not asked again on this call: the tool error says where it is.
  const answered = inputResponse(isRecord(inputResponses) ? inputResponses : undefined, REVIEW_INPUT_KEY);
  if (answered.kind === 'elicit' && answered.action !== 'accept') return result;
  return inputRequired({
    inputRequests: {
      [REVIEW_INPUT_KEY]: inputRequired.elicitUrl({
        message: message(pending.changeId),
        url: pending.reviewUrl,
      }),
    },
  });
}

/**
 * The URL elicitation required error (-32042) for a 2025-era client that declared URL elicitation,
 * when `result` is a call of ads_apply_change for a change awaiting a person; else undefined.
 */
export function legacyElicitation(
  tool: string,
  result: ToolResult,
  declared: boolean,
): UrlElicitationRequiredError | undefined {
  if (tool !== APPLY_TOOL || !declared) return undefined;
  const pending = awaitingPerson(result);
  if (pending === undefined) return undefined;
  return new UrlElicitationRequiredError(
    [
      {
        mode: 'url',
        elicitationId: `change-${pending.changeId}`,
        message: message(pending.changeId),
        url: pending.reviewUrl,
      },
    ],
    `${message(pending.changeId)} Review page: ${pending.reviewUrl}`,
  );
}
