/**
 * The 16 header lines a REST read carries beyond F's (values as the service sends them), for bench/header-lines.ts and
 * bench/answer-writes.ts. A module of its own, apart from bench/scenarios.ts, so that header-lines.ts's bare servers
 * load nothing of the service.
 */
export const REST_ANSWER_LINES: ReadonlyArray<readonly [string, string]> = [
  ['x-request-id', 'efd55ef5-bdd8-4a3e-beaf-83769c90c69b'],
  ['content-security-policy', "default-src 'none';frame-ancestors 'none'"],
  ['cross-origin-resource-policy', 'cross-origin'],
  ['referrer-policy', 'no-referrer'],
  ['strict-transport-security', 'max-age=31536000; includeSubDomains'],
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'SAMEORIGIN'],
  ['vary', 'Origin'],
  ['x-ratelimit-limit', '1000'],
  ['x-ratelimit-remaining', '999'],
  ['x-ratelimit-reset', '1795881496'],
  ['x-ratelimit-resource', 'minute'],
  ['ratelimit-policy', '"minute";q=1000;w=60, "day";q=100000;w=86400'],
  ['ratelimit', '"minute";r=999;t=60'],
  ['etag', '"2l9Fw4VUO7kr8CvBlt4zaMCqXZ0w"'],
  ['cache-control', 'private, no-cache'],
];
