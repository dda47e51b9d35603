/**
 * ToolFailure is a tool's own failure, thrown from its route: callTool returns it as a tool error
 * (`isError: true`) with `code`, `message` and the `extra` fields, for outcomes no service error
 * code states (such as an ad-platform answer the tool maps itself, or a change that failed).
 */
export class ToolFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}
