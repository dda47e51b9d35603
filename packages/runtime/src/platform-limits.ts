/**
 * What the ad platform takes in one request, known to the services that prepare a change and to
 * the upstream-proxy that sends it, so a change that could never be sent is refused when it is
 * prepared, before a person reviews it, not when it is applied.
 */

/** The largest JSON body of one platform request, in bytes of its UTF-8 text (1 MiB). */
export const MAX_PLATFORM_BODY_BYTES = 1024 * 1024;
