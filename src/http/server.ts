/**
 * The HTTP server around the app's request handler: Node's own refusals answer the Error shape, and
 * shutdown drains keep-alive clients (SPEC §10).
 */
import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { ErrorCode } from '../domain/errors.js';
import { EdgeError, toErrorBody } from './errors.js';

export interface HttpServerOptions {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  logger: Logger;
}

export interface HttpServer {
  server: Server;
  /**
   * Stops accepting connections, closes idle keep-alive sockets, marks every response
   * `Connection: close`, and waits for in-flight requests up to `graceMs`; those still unanswered
   * then are refused with 503 UNAVAILABLE and their connections closed. Resolves when no connection
   * is left, so the caller can close the database under no request.
   */
  drain(graceMs: number): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export function createHttpServer(handler: Handler, options: HttpServerOptions): HttpServer {
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  const server = createServer(
    {
      requestTimeout: options.requestTimeoutMs,
      headersTimeout: options.headersTimeoutMs,
      // How often Node checks those timeouts (default 30 s, too coarse for a short headersTimeout).
      connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(options.headersTimeoutMs / 4))),
      // Idle keep-alive sockets stay open longer than a load balancer's idle timeout (often 60 s), so
      // the server never closes a socket a client or proxy is about to reuse (Node's 5 s default
      // races with them and surfaces as reset connections).
      keepAliveTimeout: 65_000,
    },
    (req, res) => {
      inFlight.add(res);
      res.once('close', () => inFlight.delete(res));
      // During a drain a keep-alive client gets its answer and is told to go elsewhere for the next one.
      if (draining) res.setHeader('Connection', 'close');
      handler(req, res);
    },
  );
  server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => answerClientError(error, socket, options.logger));

  let drained: Promise<void> | undefined;
  return {
    server,
    drain(graceMs) {
      drained ??= new Promise<void>((resolve) => {
        draining = true;
        for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
        const timer = setTimeout(() => void refuseLeftovers(), graceMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      });
      return drained;
    },
  };

  /** The grace period is over: what has no answer yet gets 503, then every connection closes. */
  async function refuseLeftovers() {
    const refused = [...inFlight].filter((res) => !res.headersSent && !res.writableEnded);
    await Promise.all(
      refused.map(
        (res) =>
          new Promise<void>((resolve) => {
            const requestId = String(res.getHeader('x-request-id') ?? randomUUID());
            const error = new EdgeError('UNAVAILABLE', 'The service is shutting down; retry the request.', { 'Retry-After': '1' });
            const { body, headers } = toErrorBody(error, requestId);
            const payload = JSON.stringify(
              res.req?.url?.startsWith('/graphql')
                ? { errors: [{ message: body.message, extensions: { code: body.code, status: body.status, requestId } }] }
                : body,
            );
            res.writeHead(503, {
              ...headers,
              'Content-Type': 'application/json; charset=utf-8',
              'Content-Length': Buffer.byteLength(payload),
              'Cache-Control': 'no-store',
              'X-Request-Id': requestId,
              Connection: 'close',
            });
            res.end(payload, () => resolve());
            setTimeout(resolve, 1000).unref();
          }),
      ),
    );
    if (refused.length) options.logger.warn({ refused: refused.length }, 'shutdown: grace period over, unfinished requests refused with 503');
    server.closeAllConnections();
  }
}

/** Node's own refusals, before the app sees a request: status and code of the Error shape. */
const CLIENT_ERRORS: Record<string, { status: number; code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: 'HEADERS_TOO_LARGE', message: 'The request headers are too large.' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'REQUEST_TIMEOUT', message: 'The request was not received in time.' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'The chunk extensions are too large.' },
};
const MALFORMED = { status: 400, code: 'VALIDATION_FAILED' as ErrorCode, message: 'The request is not valid HTTP/1.1.' };

/**
 * What Node would answer with an empty body (400, 408, 431) gets the Error shape and a request id,
 * as long as nothing of a response has been written on the connection yet; otherwise it just closes.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, logger: Logger) {
  const current = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || current?.headersSent) {
    socket.destroy();
    return;
  }
  const refusal = CLIENT_ERRORS[error.code ?? ''] ?? MALFORMED;
  const requestId = randomUUID();
  const body = JSON.stringify({ code: refusal.code, message: refusal.message, status: refusal.status, requestId });
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\n' +
      `X-Request-Id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  logger.info({ requestId, status: refusal.status, errorCode: refusal.code, reason: error.code }, 'request refused by the HTTP parser');
}
