/** Process entry: config → app → listen; SIGTERM/SIGINT shut down gracefully, also one that comes while it starts. */
import 'reflect-metadata';
import { constants as osConstants } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { ConfigError, loadConfig, type Config } from './config.js';
import { unusableDatabase } from './db/unusable.js';

/**
 * Whether the operator gave one of these V8 flags on the node command line (`--name`, `--name=value`, with `_` or
 * `-`). Node refuses V8 flags like these in NODE_OPTIONS, so the command line is the only place to look.
 */
const operatorGave = (...names: string[]) => process.execArgv.some((arg) => names.includes(arg.split('=')[0]!.replace(/_/g, '-')));

// V8 lets the old generation grow to up to 4× what survived the last full GC before collecting again;
// under load that keeps more garbage resident than the live heap itself. 1.5× keeps RSS down at a
// CPU cost within the benchmark's noise (docs/PERFORMANCE.md, "Memory"). An operator's own
// --heap-growing-percent wins.
if (!operatorGave('--heap-growing-percent')) setFlagsFromString('--heap-growing-percent=50');
// V8 scavenges the young generation with helper threads. A request leaves almost nothing alive, so a scavenge is
// short and the helpers mostly wait on each other: one thread doing it costs less CPU per read in the
// benchmark's reads (docs/OPERATIONS.md, "Memory and garbage collection"). V8 reads this flag at each
// scavenge, so it takes effect from here (checked on Node 20.20 and 24.21: recheck on a Node upgrade). An
// operator's own --parallel-scavenge or --no-parallel-scavenge wins.
if (!operatorGave('--parallel-scavenge', '--no-parallel-scavenge', '--noparallel-scavenge')) setFlagsFromString('--no-parallel-scavenge');

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\nSee the configuration table in docs/CONFIGURATION.md.\n`);
    process.exit(1);
  }
  throw error;
}

// SIGTERM and SIGINT are caught from here on, so a stop asked for while the service starts (an orchestrator giving
// up on a slow start) is a clean one: carried out once the app is built, before it listens, never a kill halfway.
// A second signal before then ends a start that is stuck (a database that does not answer) at once, as a shell's
// kill would (exit status 128 + the signal's number). One that comes within a second of the first is taken for the
// same stop delivered twice (Ctrl-C under `npm start` reaches node from the terminal and again from npm).
const REPEAT_MS = 1000;
let pendingStop: { signal: NodeJS.Signals; at: number } | undefined;
let stopNow: ((signal: NodeJS.Signals) => void) | undefined;
const pendingSignal = () => pendingStop?.signal;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopNow) return stopNow(signal);
    if (!pendingStop) {
      pendingStop = { signal, at: performance.now() };
      process.stderr.write(`Petstore got ${signal} while starting: it stops once the start is done; send it again to stop at once.\n`);
    } else if (performance.now() - pendingStop.at >= REPEAT_MS) process.exit(128 + osConstants.signals[signal]);
  });
}

// Traces (docs/OPERATIONS.md, "Traces"): the SDK starts before the app's modules load, so its
// instrumentations see them; without the OTEL_* variables no SDK module is loaded at all.
const tracing = config.traces
  ? await (await import('./observability/otel-sdk.js')).startTracing({ database: config.database.kind })
  : undefined;
const { createApp } = await import('./app.js');

// The keys this start generated (first start only), for the shell line printed once it listens.
const made: { staff?: string; customer?: string; any?: true } = {};
const app = await createApp(config, {
  announce: (line, shown) => {
    made.any = true;
    if (shown) made[shown.role] = shown.key;
    process.stdout.write(`${line}\n`);
  },
}).catch((error: unknown) => fail(error, config));
let stopping = false;
const stop = (signal: NodeJS.Signals) => {
  if (stopping) return;
  stopping = true;
  app.logger.info({ signal }, 'shutting down');
  app
    .close()
    // The last spans are sent, for up to 5 s; a collector that is down does not fail the shutdown.
    .then(
      () =>
        tracing && Promise.race([tracing.shutdown().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000).unref())]),
    )
    .then(
      () => process.exit(0),
      (error) => {
        app.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
};

// A signal during the start means no listening at all; one while the server binds its port is carried out right after.
const url = pendingStop
  ? undefined
  : (
      await app.listen().catch(async (error: unknown) => {
        await app.close();
        return fail(error, config, 'listen');
      })
    ).url;
// From here a signal stops the app at once (and once: a repeat while it closes changes nothing). The listening line is
// printed only by a service that stays up, so whoever waits for it may signal it straight away. (`pendingSignal` is
// read through a function: the handler may have set it during the listen.)
stopNow = stop;
const pending = pendingSignal();
if (pending) stop(pending);
else if (url) {
  app.logger.info({ url, database: config.database.kind, limiter: config.redisUrl ? 'redis' : 'memory' }, 'petstore listening');
  const explorer = config.env === 'production' ? '' : `, explorer ${url}/graphiql`;
  process.stdout.write(`Petstore API on ${url}/v1  (GraphQL ${url}/graphql${explorer}, docs ${url}/docs)\n`);
  if (config.env !== 'production') process.stdout.write(shellLines(url));
}

/** Outside production: a line to paste into a shell for the README's examples, and where keys come from later. */
function shellLines(url: string): string {
  const keys = [made.staff && `STAFF=${made.staff}`, made.customer && `CUSTOMER=${made.customer}`].filter(Boolean);
  const lines = ['For the examples, paste into your shell:', `  export ${[`BASE=${url}`, ...keys].join(' ')}`];
  if (!made.any) {
    lines.push(
      'API keys are printed only on the first start. A new staff key: npm run admin -- issue-staff-key; a customer key: as staff, POST /v1/accounts (README, "Keys").',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A start that cannot succeed ends with one clear line, not a stack trace. */
function fail(error: unknown, cfg: Config, stage: 'start' | 'listen' = 'start'): never {
  const code = (error as { code?: string }).code;
  if (stage === 'listen' && code !== 'EADDRINUSE') {
    process.stderr.write(
      `Petstore could not start: cannot listen on ${cfg.host}:${cfg.port} (${code ?? (error as Error).message}); check HOST and PORT.\n`,
    );
    process.exit(1);
  }
  const reason =
    code === 'EADDRINUSE'
      ? `port ${cfg.port} on ${cfg.host} is already in use; set PORT to a free port (or stop what listens on it).`
      : (unusableDatabase(error, cfg.database) ?? `${(error as Error).message ?? error}`);
  process.stderr.write(`Petstore could not start: ${reason}\n`);
  process.exit(1);
}
