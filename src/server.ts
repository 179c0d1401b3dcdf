/**
 * The HTTP server around the app's request handler: timeouts, listening, and the graceful close
 * (no new connections, in-flight requests finish up to the grace period, then the app's resources).
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config.js';

export interface HttpServer {
  /** Starts listening; port 0 picks a free port. Resolves with the base URL. */
  listen(port: number, host: string): Promise<{ url: string; server: Server }>;
  /** Stops accepting connections and waits for in-flight requests (up to the grace period). */
  close(): Promise<void>;
}

type ServerConfig = Pick<Config, 'requestTimeoutMs' | 'headersTimeoutMs' | 'keepAliveTimeoutMs' | 'shutdownGraceMs'>;

export function createHttpServer(handler: RequestListener, config: ServerConfig, logger: Logger): HttpServer {
  let server: Server | undefined;
  return {
    async listen(port, host) {
      server = createServer(
        {
          requestTimeout: config.requestTimeoutMs,
          headersTimeout: config.headersTimeoutMs,
          // How often Node checks those timeouts (default 30 s, too coarse for a short headersTimeout).
          connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(config.headersTimeoutMs / 4))),
          // Idle keep-alive sockets stay open longer than a load balancer's idle timeout (often 60 s), so
          // the server never closes a socket a client or proxy is about to reuse (Node's 5 s default
          // races with them and surfaces as reset connections).
          keepAliveTimeout: 65_000,
        },
        handler,
      );
      server.keepAliveTimeout = config.keepAliveTimeoutMs;
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(port, host, () => resolve());
      });
      const address = server.address() as AddressInfo;
      const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
      return { url: `http://${shownHost}:${address.port}`, server };
    },
    async close() {
      if (!server) return;
      const s = server;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => s.closeAllConnections(), config.shutdownGraceMs);
        timer.unref();
        s.close(() => {
          clearTimeout(timer);
          resolve();
        });
        s.closeIdleConnections();
        logger.info({ graceMs: config.shutdownGraceMs }, 'shutdown: readiness 503, no new connections, draining in-flight requests');
      });
    },
  };
}
