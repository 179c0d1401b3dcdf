/** Why the gate refused a request; both are HTTP 429 at the edge. */
export type RefusalCode = 'RATE_LIMITED' | 'API_KEY_BANNED';

/**
 * The gate's own refusal: a code, a message for the client and the headers the answer must carry
 * (the rate-limit headers and `Retry-After`). Each facade turns it into its error shape.
 */
export class RateLimitRefusal extends Error {
  constructor(
    readonly code: RefusalCode,
    message: string,
    readonly headers: Record<string, string>,
  ) {
    super(message);
    this.name = 'RateLimitRefusal';
  }
}
