/**
 * The app's pino logger: JSON lines on stdout, secrets redacted, pretty-printed only for a developer
 * at a terminal (NODE_ENV=development and stdout a TTY, and pino-pretty installed: it is a dev dependency).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { pino, stdSerializers, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
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
    serializers: { err: errorWithoutValues },
    timestamp: isoTime,
  };
}

/** A quoted SQL literal (`'…'`, quotes doubled inside). */
const QUOTED = /'(?:[^']|'')*'/g;

/**
 * Errors as pino's own serializer writes them, with the quoted literals left out of their text: a database driver's
 * error message holds its statement with the values written in (a webhook secret, a key's hash, a customer's name).
 */
function errorWithoutValues(error: Error): ReturnType<typeof stdSerializers.err> {
  const serialized = stdSerializers.err(error);
  if (!(error instanceof Error)) return serialized;
  const fields = serialized as unknown as Record<string, unknown>;
  for (const field of ['message', 'stack', 'detail', 'sql']) {
    const text = fields[field];
    if (typeof text === 'string') fields[field] = text.replace(QUOTED, "'…'");
  }
  return serialized;
}

/**
 * pino's `isoTime` (`,"time":"2026-…Z"`), formatted once per second and completed with the milliseconds: a busy
 * service logs several lines per millisecond, and `toISOString` per line is a visible share of a request line's cost.
 */
let lastMs = 0;
let lastTime = '';
let lastSecond = -1;
let secondPrefix = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    const second = Math.floor(now / 1000);
    if (second !== lastSecond) {
      lastSecond = second;
      // `,"time":"2026-11-27T20:10:43.`: everything up to the milliseconds.
      secondPrefix = `,"time":"${new Date(second * 1000).toISOString().slice(0, 20)}`;
    }
    const ms = now - second * 1000;
    lastTime = `${secondPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
  }
  return lastTime;
}

/**
 * A child of `logger` for lines whose object is flat and holds no credential: the one line per request. Its
 * redaction pass is switched off (pino's `redact` child option), since the line carries no header and no key.
 */
export function flatLineLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}

/** The logger `createApp` uses unless given one; `destination` lets tests capture the lines. */
export function createLogger(config: Pick<Config, 'logLevel' | 'env' | 'logFlushMs'>, destination?: DestinationStream): Logger {
  const options = loggerOptions(config);
  if (destination) return pino(options, destination);
  if (config.env === 'development' && process.stdout.isTTY && prettyAvailable()) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', singleLine: true } },
    });
  }
  // pino's own stdout destination (sonic-boom) writes on libuv's thread pool, never blocking this thread on a
  // slow reader of the pipe; pino writes what is left when the process exits.
  return config.logFlushMs > 0 ? pino(options, batchedStdout(config.logFlushMs)) : pino(options);
}

/** Request lines are handed over ~16 KB at a time: sonic-boom's largest single write (`maxWrite`). */
const LOG_BATCH_BYTES = 16_384;
/** A batch's buffer: room for a full batch and one more line of up to ~5,400 characters (3 bytes each at most). */
const BATCH_CAPACITY = 2 * LOG_BATCH_BYTES;
/** pino's level of a warning: a request line at it or above (a 5xx's) is written at once. */
const WARN = 40;

/** The message of the one line per request (src/http/request-observer.ts): the lines that go out in batches. */
export const REQUEST_LINE = 'request';

/**
 * stdout in batches: request lines go out one write per ~16 KB instead of one per line. A line written by itself
 * costs a round trip through libuv's thread pool (the bench's one-client REST read shows it). Each request line is
 * encoded into the batch's buffer as it is logged, outside V8's heap: a batch kept as a string would hold every
 * waiting line's pieces (pino builds a line by concatenation) for each young collection to copy. The batch goes to
 * pino's asynchronous destination (sonic-boom, in its `buffer` mode) whole. So that no line waits for a full batch,
 * a timer armed only while lines wait hands them over at most `flushMs` after they were logged. Every other line
 * (start, shutdown, warnings, errors), and a request line that is a warning (a 5xx's), is handed over at once, after
 * what waits before it. Lost to a SIGKILL or a power cut: at most those `flushMs` of request lines (the rest is
 * written at a normal exit, a crash's included).
 */
function batchedStdout(flushMs: number): DestinationStream {
  // One per process and delay: every logger writing to stdout shares it, so lines keep their order.
  const known = batchedByDelay.get(flushMs);
  if (known) return known;
  const stream = pino.destination({ dest: 1, sync: false, contentMode: 'buffer' });
  const batch = Buffer.allocUnsafeSlow(BATCH_CAPACITY);
  let used = 0;
  let timer: NodeJS.Timeout | undefined;
  // Once sonic-boom is closed (the process is exiting), every line is written at once, synchronously, in order.
  let closed = false;
  const send = (bytes: Buffer) => {
    if (!closed) {
      try {
        stream.write(bytes as unknown as string); // in its `buffer` mode sonic-boom takes bytes (its types say strings)
        return;
      } catch {
        closed = true;
      }
    }
    writeAtExit(bytes);
  };
  const handOver = () => {
    if (used === 0) return;
    // A copy of the bytes used (sonic-boom keeps what it is given until written), so that the batch's buffer is reused.
    send(Buffer.from(batch.subarray(0, used)));
    used = 0;
  };
  const tick = () => {
    timer = undefined;
    handOver();
  };
  // At exit (process.exit, an uncaught error, the end of a graceful shutdown): what sonic-boom holds, then the batch.
  // pino flushes sonic-boom at exit too; doing it here as well keeps the order whichever exit hook runs first.
  process.on('exit', () => {
    try {
      stream.flushSync();
    } catch {
      // Closed, or not open yet: the batch is still written below.
    }
    closed = true;
    handOver();
  });
  const batched = {
    // pino tells the destination each line's message and level (`lastMsg`, `lastLevel`) before writing it
    // (its documented `Symbol.for('pino.metadata')` on a destination).
    [Symbol.for('pino.metadata')]: true,
    lastMsg: undefined as string | undefined,
    lastLevel: 0,
    write(line: string) {
      // A UTF-16 unit takes at most 3 bytes of UTF-8: a line that might not fit goes after the batch.
      const waits = batched.lastMsg === REQUEST_LINE && batched.lastLevel < WARN && line.length * 3 <= BATCH_CAPACITY;
      if (!waits || used + line.length * 3 > BATCH_CAPACITY) handOver();
      if (!waits) {
        send(Buffer.from(line));
        return;
      }
      used += batch.write(line, used);
      if (used >= LOG_BATCH_BYTES) handOver();
      // A timer only while lines wait: an idle service wakes for nothing.
      if (used > 0 && timer === undefined) timer = setTimeout(tick, flushMs).unref();
    },
  };
  batchedByDelay.set(flushMs, batched);
  return batched;
}

/** How long an exiting process waits for a full stdout pipe before it gives its last lines up. */
const EXIT_WRITE_MS = 2000;

/** Writes `bytes` to stdout before returning (an exiting process has no later turn), waiting at most EXIT_WRITE_MS for a full pipe. */
function writeAtExit(bytes: Buffer): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + EXIT_WRITE_MS;
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(fs.writeSync(1, bytes));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== 'EAGAIN' && code !== 'EBUSY') || Date.now() > deadline) return;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}
const batchedByDelay = new Map<number, DestinationStream>();

function prettyAvailable(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}
