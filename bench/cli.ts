/**
 * The bench tools' command line, one way for all of them: node's `parseArgs` (strict: an option a tool does not
 * know is refused), plus
 *
 * - `--help` / `-h`: prints the tool's own header comment (its usage, with examples) and exits 0;
 * - a refused command line (an unknown option, a missing value, a number option given something else than a
 *   number): one line on stderr saying what is wrong and how to see the options, exit status 2, no stack trace;
 * - an option whose default is a number (`rounds: { type: 'string', default: '5' }`), or one named as a number
 *   option, takes only a number; a value that starts with `-` goes after `=` (`--node-args=--no-flush-bytecode`).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { projectPath } from '../src/project-path.js';

type Parsed<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>>;

/** A refused command line: its message is for the person who typed it. */
class UsageError extends Error {}

/** The leading `/** … *\/` comment of a tool's source, as plain text (its usage). */
function toolUsage(toolUrl: string): string {
  const source = readFileSync(fileURLToPath(toolUrl), 'utf8');
  const comment = /^(?:#![^\n]*\n)?\s*\/\*\*([\s\S]*?)\*\//.exec(source)?.[1];
  if (!comment) return `${toolName(toolUrl)}: no usage written\n`;
  return `${comment
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim()}\n`;
}

function toolName(toolUrl: string): string {
  return basename(fileURLToPath(toolUrl));
}

/**
 * Checks what `parseArgs` leaves alone: a number option's value, when given, is a number. Number options are those
 * whose default is a number and those named in `numbers` (no default, or a default that means "not given").
 */
function checkNumbers(config: ParseArgsConfig, values: Record<string, unknown>, numbers: readonly string[]): void {
  for (const [name, option] of Object.entries(config.options ?? {})) {
    const fallback = option.default;
    const numeric = numbers.includes(name) || (typeof fallback === 'string' && /^-?\d+(\.\d+)?$/.test(fallback));
    if (option.type !== 'string' || !numeric) continue;
    const given = values[name];
    if (typeof given !== 'string' || given === fallback) continue;
    if (given.trim() === '' || !Number.isFinite(Number(given))) {
      throw new UsageError(
        `option --${name} takes a number${typeof fallback === 'string' && fallback !== '' ? ` (default ${fallback})` : ''}, got ${JSON.stringify(given)}`,
      );
    }
  }
}

/**
 * Parses the tool's command line (`process.argv`) by `config`. `toolUrl` is the tool's `import.meta.url`: `--help`
 * prints that file's header comment. `numbers`: options that take a number but have no numeric default.
 */
export function benchArgs<T extends ParseArgsConfig>(
  toolUrl: string,
  config: T,
  { numbers = [], argv = process.argv.slice(2) }: { numbers?: readonly string[]; argv?: string[] } = {},
): Parsed<T> {
  const options = argv.includes('--') ? argv.slice(0, argv.indexOf('--')) : argv;
  if (options.includes('--help') || options.includes('-h')) {
    // Written at once: process.exit does not wait for a pipe to drain.
    writeSync(1, toolUsage(toolUrl));
    process.exit(0);
  }
  try {
    const parsed = parseArgs({ ...config, args: argv }) as Parsed<T>;
    checkNumbers(config, parsed.values as Record<string, unknown>, numbers);
    return parsed;
  } catch (error) {
    const known = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_');
    if (!known) throw error;
    // node's own messages can run over several lines (an ambiguous `--opt -x` explains itself): the first says it.
    const first = (error as Error).message.split('\n')[0]!;
    return refuse(
      toolUrl,
      first.endsWith('is ambiguous.') ? `${first} A value that starts with "-" goes after "=" (--name=-value).` : first,
    );
  }
}

/** Refuses the command line: one line saying what is wrong and how to see the options, exit status 2. */
export function refuse(toolUrl: string, message: string): never {
  writeSync(2, `${toolName(toolUrl)}: ${message}\n  (--help prints the options and examples)\n`);
  process.exit(2);
}

/** The version of the node binary at `path` (`v26.1.0`), as a run's report names it. */
export function nodeVersion(path: string): string {
  return execFileSync(path, ['-p', 'process.version'], { encoding: 'utf8' }).trim();
}

/** The commit measured, as a run's report names it (`-dirty` with uncommitted changes; `unknown` outside git). */
export function measuredCommit(): string {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty', '--abbrev=7'], { cwd: projectPath('.'), encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
