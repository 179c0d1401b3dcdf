/**
 * Answers the HTTP server writes itself, outside Koa, in the documented Error shape: requests Node's
 * parser refuses (oversized headers, a slow client, bytes that are not HTTP), requests without exactly one
 * Host header, and requests a shutdown could not finish within its grace period. Each carries an API answer's
 * security headers, and under `/v1` and `/graphql` the client address's rate-limit headers, as every API answer.
 */
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { MAX_FORWARDED_FOR_LENGTH, type RequestHead as AddressSource } from './client-address.js';
import { facadeOf } from './context.js';
import { apiSecurityHeaders } from './security-headers.js';
import { errorContentType, type ErrorFormats } from './error-envelope.js';
import { HttpError, toErrorBody } from './errors.js';
import type { ErrorCode } from './error-status.js';

/** A complete answer: status, headers and the JSON text of the body (what `src/server.ts` writes). */
type Refusal = { status: number; headers: Record<string, string>; body: string };

/** The rate-limit headers of a request's client address (the address as the request walk resolves it). */
type AddressHeaders = (req: RequestHead) => Record<string, string>;

/** What a refusal reads of its request: a request's, or, for one Node's parser refused, what the bytes received give. */
type RequestHead = AddressSource & { url?: string; method?: string };

function refusal(
  error: HttpError,
  requestId: string,
  req: RequestHead,
  path: string,
  formats: ErrorFormats,
  rate: AddressHeaders,
): Refusal {
  const { body, headers } = toErrorBody(error, requestId);
  const facade = facadeOf(path);
  const render = formats.renderers[facade];
  return {
    status: body.status,
    headers: {
      ...apiSecurityHeaders(),
      ...(facade === 'meta' ? undefined : rate(req)),
      ...headers,
      'Content-Type': errorContentType(formats, facade, header(req, 'accept')),
      'Cache-Control': 'no-store',
      'X-Request-Id': requestId,
      Connection: 'close',
    },
    body: JSON.stringify(render ? render(body) : body),
  };
}

/** Node's parser errors, by `error.code`: what Node would answer with an empty body (431, 408, 413, 400). */
const PARSER_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: { code: 'HEADERS_TOO_LARGE', message: 'The request headers are too large (at most 16 KiB).' },
  ERR_HTTP_REQUEST_TIMEOUT: { code: 'REQUEST_TIMEOUT', message: 'The request was not received in time.' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { code: 'PAYLOAD_TOO_LARGE', message: 'The chunk extensions are too large.' },
};

const header = (req: RequestHead, name: 'accept'): string | undefined => req.headers[name];

/**
 * The Accept and X-Forwarded-For headers among received bytes: up to one character past the forwarding header's
 * length that the address resolver reads, so that an oversized one is ignored here as it is on a request.
 */
const FORWARDED_OR_ACCEPT = new RegExp(`\\r\\n(accept|x-forwarded-for):[ \\t]*([^\\r\\n]{0,${MAX_FORWARDED_FOR_LENGTH + 1}})`, 'gi');

/**
 * The answer to a request the parser refused (no request exists yet: a fresh request id). Its shape is
 * the facade's when the bytes received start with a request line naming a path (`GET /graphql?query=…
 * HTTP/1.1` too long: GraphQL's `{errors}`), REST's otherwise.
 */
export function parserRefusal(
  errorCode: string | undefined,
  received: Buffer | undefined,
  socket: Socket,
  formats: ErrorFormats,
  rate: AddressHeaders,
): Refusal {
  const known = PARSER_ERRORS[errorCode ?? ''] ?? { code: 'VALIDATION_FAILED', message: 'The request is not valid HTTP/1.1.' };
  const text = received?.toString('latin1') ?? '';
  // Best effort: the headers the answer depends on (Accept, X-Forwarded-For for the client address) among the bytes
  // received before the refusal (Node gives the last chunk read), in the header block.
  const end = text.indexOf('\r\n\r\n');
  const head = end === -1 ? text : text.slice(0, end);
  const req: RequestHead = { socket, headers: {} };
  for (const [, name, value] of head.matchAll(FORWARDED_OR_ACCEPT)) {
    const key = name!.toLowerCase();
    req.headers[key] = key === 'accept' ? (req.headers[key] ?? value) : [req.headers[key], value].filter(Boolean).join(', ');
  }
  return refusal(new HttpError(known.code, known.message), randomUUID(), req, requestPath(text), formats, rate);
}

/** The path of the request line at the start of `received` ('/' when there is none). */
function requestPath(received: string): string {
  const line = /^[A-Z]{3,10} (\/[^ ?#\r\n]*)/.exec(received.slice(0, 1024));
  return line?.[1] ?? '/';
}

const pathOf = (req: RequestHead) => (req.url ?? '/').split('?')[0]!;

/** Methods that change nothing: their unfinished request can simply be sent again. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The answer to a request still unanswered when the shutdown's grace period ends: 503, retry elsewhere. A request
 * that may change something is not said to be undone: its transaction, still running, may commit after this answer.
 */
export function shutdownRefusal(
  requestId: string | undefined,
  req: RequestHead,
  charged: boolean,
  formats: ErrorFormats,
  rate: AddressHeaders,
): Refusal {
  const path = pathOf(req);
  const message = SAFE_METHODS.has(req.method ?? 'GET')
    ? 'The service is shutting down; retry the request.'
    : facadeOf(path) === 'graphql'
      ? 'The service shut down before this request finished; if it was a mutation, its change may still be applied: ' +
        'repeat it with the same idempotencyKey (placeOrder), or read before repeating it.'
      : 'The service shut down before this request finished, and a change it makes may still be applied: repeat it ' +
        'with the same Idempotency-Key, or read the resource before repeating it.';
  const error = new HttpError('UNAVAILABLE', message, { 'Retry-After': '1' });
  // A request already charged has its key's (or its address's) rate-limit headers on the answer: they stay.
  return refusal(error, requestId ?? randomUUID(), req, path, formats, charged ? () => ({}) : rate);
}

/** The answer to an HTTP/1.1 request without a Host header, or to a request with several. */
export function hostRefusal(req: RequestHead, count: number, formats: ErrorFormats, rate: AddressHeaders): Refusal {
  const message =
    count === 0 ? 'The request has no Host header; HTTP/1.1 requires one.' : 'The request has more than one Host header; send exactly one.';
  return refusal(new HttpError('VALIDATION_FAILED', message), randomUUID(), req, pathOf(req), formats, rate);
}

/**
 * The answers the HTTP server writes itself (`Refusals` of src/server.ts), in each facade's shape and media type,
 * with `rate`'s headers for the request's client address.
 */
export function serverRefusals(formats: ErrorFormats, rate: AddressHeaders) {
  return {
    parser: (errorCode: string | undefined, received: Buffer | undefined, socket: Socket) =>
      parserRefusal(errorCode, received, socket, formats, rate),
    shutdown: (requestId: string | undefined, req: RequestHead, charged: boolean) =>
      shutdownRefusal(requestId, req, charged, formats, rate),
    host: (req: RequestHead, count: number) => hostRefusal(req, count, formats, rate),
  };
}
