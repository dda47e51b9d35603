/** The MCP Apps view's address and the `_meta` prepare tools list it with (no imports: the catalogue reads it). */
export const CHANGE_REVIEW_VIEW_URI = 'ui://adsmcp/change-review';
/** What a prepare tool's listing carries so that an MCP Apps host shows the view with its result. */
export const PREPARE_TOOL_META = { ui: { resourceUri: CHANGE_REVIEW_VIEW_URI } } as const;
