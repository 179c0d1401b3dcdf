/**
 * The HTTP server around the app's request handler: timeouts, listening, answers to what Node's parser
 * refuses, and the graceful close that drains keep-alive clients: no new connections, `Connection: close`
 * on every answer from the signal on, a keep-alive socket closed only when it carries no request (after
 * its answer, or once idle for a short grace), in-flight requests finish up to the grace period and the
 * rest are refused before the app's resources close.
 */
import { Server as NetServer, type Socket } from 'node:net';
import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from './config.js';

export interface HttpServer {
  /** The `node:http` server (not yet listening): WebSocket upgrades attach to it. */
  node: Server;
  /** Starts listening; port 0 picks a free port. Resolves with the base URL. */
  listen(port: number, host: string): Promise<{ url: string }>;
  /**
   * Stops accepting connections and marks every answer `Connection: close` (a keep-alive socket then
   * closes after its answer); a socket that carries no request closes once it has been idle for a short
   * grace, never while a request is on it. In-flight requests finish up to the grace period; those still
   * unanswered then get the shutdown refusal (503) and every connection closes. Resolves when no
   * connection is left. Nothing to do if the server never listened.
   */
  close(): Promise<void>;
}

/** How long a keep-alive socket may stay idle during a drain before it is closed (a client reusing it at once is answered, with `Connection: close`). */
const IDLE_GRACE_MS = 1000;

/** A complete answer the server writes itself. */
export interface Refusal {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The answers the server writes outside the app, in the app's error shape (src/http/refusals.ts). */
export interface Refusals {
  /** A request Node's parser refused, by the error's code (oversized headers, timeout, not HTTP), on `socket`. */
  parser(errorCode: string | undefined, received: Buffer | undefined, socket: Socket): Refusal;
  /** A request unanswered when the grace period ends (`charged`: its answer has its rate-limit headers already). */
  shutdown(requestId: string | undefined, req: IncomingMessage, charged: boolean): Refusal;
  /** An HTTP/1.1 request without a Host header, or any request with more than one (RFC 9112 §3.2: 400). */
  host(req: IncomingMessage, count: number): Refusal;
}

type ServerConfig = Pick<Config, 'requestTimeoutMs' | 'headersTimeoutMs' | 'keepAliveTimeoutMs' | 'shutdownGraceMs'>;

/** An open connection as the drain sees it, kept from the server's public events. */
interface Connection {
  /** The answers under way on it: from the request's `request` event until the answer's `close`. */
  answers: Set<ServerResponse>;
  /** Whether it left HTTP for a WebSocket (the subscription server closes those). */
  upgraded: boolean;
  /** During a drain: since when it has been seen carrying no request, and how much it had read then. */
  idle?: { since: number; bytesRead: number };
}

export function createHttpServer(handler: RequestListener, config: ServerConfig, logger: Logger, refusals: Refusals): HttpServer {
  let listening = false;
  /** The open connections, each with what it carries now. */
  const connections = new Map<Socket, Connection>();
  let draining = false;
  let closing: Promise<void> | undefined;

  const server = createServer(
    {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      // How often Node checks those timeouts (default 30 s, too coarse for a short headersTimeout).
      connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(config.headersTimeoutMs / 4))),
      // Idle keep-alive sockets stay open longer than a load balancer's idle timeout (often 60 s), so
      // the server never closes a socket a client or proxy is about to reuse (Node's 5 s default
      // races with them and surfaces as reset connections).
      keepAliveTimeout: 65_000,
      // Node's own check answers a bare 400 (no body, no request id); the handler below answers it in the error shape.
      requireHostHeader: false,
    },
    (req: IncomingMessage, res: ServerResponse) => {
      const connection = connections.get(req.socket);
      if (connection) {
        connection.answers.add(res);
        res.once('close', () => connection.answers.delete(res));
      }
      const hosts = hostHeaders(req);
      if (hosts !== 1 && (hosts > 1 || req.httpVersionMajor > 1 || req.httpVersionMinor > 0)) {
        const refusal = refusals.host(req, hosts);
        res.writeHead(refusal.status, { ...refusal.headers, 'Content-Length': Buffer.byteLength(refusal.body) });
        res.end(refusal.body);
        logger.info(
          { requestId: refusal.headers['X-Request-Id'], status: refusal.status, hosts },
          'request refused: not exactly one Host header',
        );
        return;
      }
      // During a drain a keep-alive client gets its answer and is told to go elsewhere for the next one.
      if (draining) res.setHeader('Connection', 'close');
      handler(req, res);
    },
  );
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  server.on('connection', (socket: Socket) => {
    connections.set(socket, { answers: new Set(), upgraded: false });
    socket.once('close', () => connections.delete(socket));
  });
  server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    const connection = connections.get(socket as Socket);
    if (connection) connection.upgraded = true;
    // Only this listener left (the subscription server has closed, as it does at shutdown): nobody will answer it.
    if (server.listenerCount('upgrade') === 1) socket.destroy();
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
    answerClientError(error, socket, connections.get(socket as Socket), refusals, logger),
  );

  /** The answers under way, on every connection. */
  const inFlight = () => [...connections.values()].flatMap((connection) => [...connection.answers]);

  /** The grace period is over: what has no answer yet is refused, then every connection closes. */
  async function refuseLeftovers() {
    const unanswered = inFlight().filter((res) => !res.headersSent && !res.writableEnded);
    await Promise.all(
      unanswered.map(
        (res) =>
          new Promise<void>((resolve) => {
            const requestId = res.getHeader('x-request-id');
            const requestIdOf = typeof requestId === 'string' ? requestId : undefined;
            const refusal = refusals.shutdown(requestIdOf, res.req, res.hasHeader('x-ratelimit-limit'));
            res.writeHead(refusal.status, { ...refusal.headers, 'Content-Length': Buffer.byteLength(refusal.body) });
            res.end(refusal.body, () => resolve());
            setTimeout(resolve, 1000).unref();
          }),
      ),
    );
    if (unanswered.length) logger.warn({ refused: unanswered.length }, 'shutdown: grace period over, unfinished requests refused with 503');
    server.closeAllConnections();
  }

  /**
   * Closes the HTTP sockets that have carried no request and read nothing for the idle grace, as seen by this sweep
   * and the ones before it (a request on a socket keeps it open, and starts its grace again). A socket upgraded to a
   * WebSocket is left to the subscription server, which closes those.
   */
  function closeIdleSockets(graceMs: number) {
    const now = Date.now();
    for (const [socket, connection] of connections) {
      const seen = connection.idle;
      if (connection.answers.size > 0 || connection.upgraded) {
        connection.idle = undefined;
      } else if (!seen || seen.bytesRead !== socket.bytesRead) {
        connection.idle = { since: now, bytesRead: socket.bytesRead };
      } else if (now - seen.since >= graceMs) {
        socket.destroy();
      }
    }
  }

  return {
    node: server,
    async listen(port, host) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      listening = true;
      const address = server.address() as AddressInfo;
      const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
      return { url: `http://${shownHost}:${address.port}` };
    },
    close() {
      if (!listening) return Promise.resolve();
      closing ??= new Promise<void>((resolve) => {
        draining = true;
        for (const res of inFlight()) if (!res.headersSent) res.setHeader('Connection', 'close');
        const idleGraceMs = Math.min(IDLE_GRACE_MS, Math.floor(config.shutdownGraceMs / 2));
        // The sockets idle now start their grace now (how long one was idle before is not kept).
        closeIdleSockets(idleGraceMs);
        const sweep = setInterval(() => closeIdleSockets(idleGraceMs), Math.max(10, Math.floor(idleGraceMs / 4)));
        sweep.unref();
        const timer = setTimeout(() => void refuseLeftovers(), config.shutdownGraceMs);
        timer.unref();
        // net.Server's close: no new connections, done when the last one ends. (http.Server's would also
        // close every idle keep-alive socket at once, racing the client's next request on it.)
        NetServer.prototype.close.call(server, () => {
          clearTimeout(timer);
          clearInterval(sweep);
          server.closeIdleConnections();
          resolve();
        });
        logger.info({ graceMs: config.shutdownGraceMs }, 'shutdown: readiness 503, no new connections, draining in-flight requests');
      });
      return closing;
    },
  };
}

/** How many Host headers the request carries (Node keeps only the first in `headers`). */
function hostHeaders(req: IncomingMessage): number {
  if (req.headers.host === undefined) return 0;
  const raw = req.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') count++;
  return count;
}

/**
 * What Node would answer with an empty body (400, 408, 431) gets the Error shape and a request id, as
 * long as no answer has started on the connection; otherwise the connection just closes.
 */
function answerClientError(
  error: NodeJS.ErrnoException,
  socket: Duplex,
  connection: Connection | undefined,
  refusals: Refusals,
  logger: Logger,
) {
  const answerStarted = connection !== undefined && [...connection.answers].some((res) => res.headersSent);
  if (error.code === 'ECONNRESET' || !socket.writable || answerStarted) {
    socket.destroy();
    return;
  }
  const refusal = refusals.parser(error.code, (error as NodeJS.ErrnoException & { rawPacket?: Buffer }).rawPacket, socket as Socket);
  const headers = { ...refusal.headers, 'Content-Length': String(Buffer.byteLength(refusal.body)) };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n${head}\r\n${refusal.body}`);
  logger.info(
    { requestId: refusal.headers['X-Request-Id'], status: refusal.status, reason: error.code },
    'request refused by the HTTP parser',
  );
}
