/**
 * Answers the HTTP server writes itself, outside Koa, in the documented Error shape: requests Node's
 * parser refuses (oversized headers, a slow client, bytes that are not HTTP), requests without exactly one
 * Host header, and requests a shutdown could not finish within its grace period.
 */
import { randomUUID } from 'node:crypto';
import { facadeOf } from './context.js';
import { errorContentType, type ErrorFormats } from './error-envelope.js';
import { HttpError, toErrorBody } from './errors.js';
import type { ErrorCode } from './error-status.js';

/** A complete answer: status, headers and the JSON text of the body (what `src/server.ts` writes). */
type Refusal = { status: number; headers: Record<string, string>; body: string };

function refusal(error: HttpError, requestId: string, path: string, formats: ErrorFormats, accept: string | undefined): Refusal {
  const { body, headers } = toErrorBody(error, requestId);
  const facade = facadeOf(path);
  const render = formats.renderers[facade];
  return {
    status: body.status,
    headers: {
      ...headers,
      'Content-Type': errorContentType(formats, facade, accept),
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

/**
 * The answer to a request the parser refused (no request exists yet: a fresh request id). Its shape is
 * the facade's when the bytes received start with a request line naming a path (`GET /graphql?query=…
 * HTTP/1.1` too long: GraphQL's `{errors}`), REST's otherwise.
 */
export function parserRefusal(errorCode: string | undefined, received: Buffer | undefined, formats: ErrorFormats): Refusal {
  const known = PARSER_ERRORS[errorCode ?? ''] ?? { code: 'VALIDATION_FAILED', message: 'The request is not valid HTTP/1.1.' };
  const text = received?.toString('latin1') ?? '';
  // Best effort: the Accept header among the bytes received before the refusal, in the header block, its first KiB.
  const end = text.indexOf('\r\n\r\n');
  const accept = /\r\naccept:[ \t]*([^\r\n]{0,1024})/i.exec(end === -1 ? text : text.slice(0, end))?.[1];
  return refusal(new HttpError(known.code, known.message), randomUUID(), requestPath(text), formats, accept);
}

/** The path of the request line at the start of `received` ('/' when there is none). */
function requestPath(received: string): string {
  const line = /^[A-Z]{3,10} (\/[^ ?#\r\n]*)/.exec(received.slice(0, 1024));
  return line?.[1] ?? '/';
}

/** The answer to a request still unanswered when the shutdown's grace period ends: 503, retry elsewhere. */
export function shutdownRefusal(requestId: string | undefined, path: string, formats: ErrorFormats, accept?: string): Refusal {
  const error = new HttpError('UNAVAILABLE', 'The service is shutting down; retry the request.', { 'Retry-After': '1' });
  return refusal(error, requestId ?? randomUUID(), path, formats, accept);
}

/** The answer to an HTTP/1.1 request without a Host header, or to a request with several. */
export function hostRefusal(path: string, count: number, formats: ErrorFormats, accept?: string): Refusal {
  const message =
    count === 0 ? 'The request has no Host header; HTTP/1.1 requires one.' : 'The request has more than one Host header; send exactly one.';
  return refusal(new HttpError('VALIDATION_FAILED', message), randomUUID(), path, formats, accept);
}

/** The answers the HTTP server writes itself (`Refusals` of src/server.ts), in each facade's shape and media type. */
export function serverRefusals(formats: ErrorFormats) {
  return {
    parser: (errorCode: string | undefined, received: Buffer | undefined) => parserRefusal(errorCode, received, formats),
    shutdown: (requestId: string | undefined, path: string, accept?: string) => shutdownRefusal(requestId, path, formats, accept),
    host: (path: string, count: number, accept?: string) => hostRefusal(path, count, formats, accept),
  };
}
