/**
 * The schema builders of the tool inputs. They are the runtime's, so that the changes service
 * checks a platform request body against the same declaration a tool publishes.
 */
export * from '@adsmcp/runtime/schema';
