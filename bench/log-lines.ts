/**
 * Micro-benchmark behind "request log lines in batches" (docs/DECISIONS.md): the CPU one request line costs, from
 * the observer's `logger.info(line, 'request')` to its bytes on stdout, with the service's own logger
 * (`createLogger`, `LOG_FLUSH_MS` batches, `flatLineLogger`). Lines are logged 16 per turn of the event loop (the
 * destination's writes finish between turns, as they do in a busy server); stdout should be /dev/null or a file.
 *
 *   npm run build && node dist/bench/log-lines.js [--rounds 3] > /dev/null
 *
 * Prints to stderr. Copied with cli.js into another build's dist/bench/ (`bash bench/build-ref.sh <commit>`), it measures that
 * build's logger; `valgrind --tool=callgrind node dist/bench/log-lines.js --lines N` counts its instructions (run it
 * with two values of N: the difference over the difference in lines is per line, start-up left out).
 */
import { benchArgs } from './cli.js';
import { setImmediate as turn } from 'node:timers/promises';
import { createLogger, flatLineLogger, REQUEST_LINE } from '../src/observability/logger.js';

const { values: args } = benchArgs(import.meta.url, { options: { rounds: { type: 'string', default: '3' }, lines: { type: 'string', default: '' } } }, { numbers: ['lines'] });
const PER_TURN = 16;

const logger = flatLineLogger(createLogger({ logLevel: 'info', env: 'production', logFlushMs: 100 }));
let n = 0;
/** A REST read's line, as the observer builds it (a new object and a new duration each time). */
const lineOf = () => ({
  requestId: `0d5b1f0e-8f3c-4a57-9c1e-${String(100_000_000_000 + n++)}`,
  method: 'GET',
  path: '/v1/pets',
  route: 'GET /v1/pets',
  facade: 'rest',
  operationName: undefined,
  status: 200,
  durationMs: (n % 1000) / 97,
  accountId: 1,
  keyId: 1,
  errorCode: undefined,
});

async function log(lines: number): Promise<void> {
  for (let i = 0; i < lines; i++) {
    logger.info(lineOf(), REQUEST_LINE);
    if (i % PER_TURN === PER_TURN - 1) await turn();
  }
}

if (args.lines) {
  await log(Number(args.lines));
} else {
  const lines = 200_000;
  await log(lines / 4);
  for (let round = 1; round <= Number(args.rounds); round++) {
    const before = process.cpuUsage();
    await log(lines);
    const used = process.cpuUsage(before);
    process.stderr.write(`round ${round}: ${((used.user + used.system) / lines).toFixed(2)} µs of CPU per request line (${lines} lines)\n`);
  }
}
