/**
 * The app's pino logger: JSON lines on stdout, secrets redacted, pretty-printed only for a developer
 * at a terminal (NODE_ENV=development and stdout a TTY, and pino-pretty installed: it is a dev dependency).
 */
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { Config } from '../config.js';

/**
 * Everything that may hold a credential, wherever it appears in a log object. The request log line
 * logs no headers at all; these paths catch anything else (an error carrying a request, a config dump).
 */
export const REDACT_PATHS = [
  'apiKey',
  'key',
  'adminApiKey',
  'password',
  'authorization',
  'headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
  '*.apiKey',
  '*.key',
  '*.adminApiKey',
  '*.password',
  '*.authorization',
  '*.headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers.cookie',
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
];

export function loggerOptions(config: Pick<Config, 'logLevel'>): LoggerOptions {
  return {
    level: config.logLevel,
    base: { service: 'petstore' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: isoTime,
  };
}

/**
 * pino's `isoTime` (`,"time":"2026-…Z"`), formatted once per millisecond: a busy service logs several
 * lines per millisecond, and `toISOString` is a tenth of a request line's cost.
 */
let lastMs = 0;
let lastTime = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

/** The logger `createApp` uses unless given one; `destination` lets tests capture the lines. */
export function createLogger(config: Pick<Config, 'logLevel' | 'env'>, destination?: DestinationStream): Logger {
  const options = loggerOptions(config);
  if (destination) return pino(options, destination);
  if (config.env === 'development' && process.stdout.isTTY && prettyAvailable()) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', singleLine: true } } });
  }
  // pino's own stdout destination (sonic-boom): each write runs on libuv's thread pool, and the lines logged
  // while one is under way go out together in the next (about one write per five request lines under load);
  // pino writes what is left when the process exits. A synchronous destination batching 4 KB per write
  // (a third as many writes, half the thread-pool wake-ups) measured no cheaper per request (2026-11-27,
  // PERFORMANCE-LOG.md), and would have lost up to its flush delay of lines to a SIGKILL.
  return pino(options);
}

function prettyAvailable(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}
