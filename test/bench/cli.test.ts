/**
 * The bench tools' command line (bench/cli.ts): `--help` prints a tool's usage, and a command line it cannot take
 * gets one line saying what is wrong, exit status 2, never a stack trace.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { projectPath } from '../../src/project-path.js';

function tool(name: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [projectPath(`dist/bench/${name}.js`), ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

test("--help prints the tool's usage from its header comment, with examples, and starts nothing", () => {
  const run = tool('run', '--help');
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^`npm run bench` — the service against its floors/);
  assert.match(run.stdout, /^ {2}npm run bench -- --only floor,rest-ids --rounds 5 --duration 10$/m);
  assert.doesNotMatch(run.stdout, /^\s*\*/m, "the comment's leading stars are gone");
  assert.doesNotMatch(run.stdout, /CPU µs\/op|seeded/, 'no benchmark ran');
  const short = tool('instructions', '-h');
  assert.equal(short.status, 0, short.stderr);
  assert.match(short.stdout, /callgrind/);
  assert.doesNotMatch(short.stdout, /Ir\/request/, 'nothing was counted');
  const gc = tool('young-gc', '--help');
  assert.equal(gc.status, 0, gc.stderr);
  assert.match(gc.stdout, /^ {2}npm run bench:gc -- --only gql-pet --node-args=--max-semi-space-size=32/m);
  assert.doesNotMatch(gc.stdout, /collections \/ 1,000/, 'nothing was loaded');
});

test('an unknown option, a number option given a word, a missing argument: one line, exit 2, no stack trace', () => {
  for (const [name, args, says] of [
    ['run', ['--round', '5'], /run\.js: Unknown option '--round'/],
    ['run', ['--rounds', 'five'], /run\.js: option --rounds takes a number \(default 5\), got "five"/],
    ['run', ['--flood-seconds', ''], /option --flood-seconds takes a number/],
    // node's message for a value that starts with a dash runs over three lines: one is printed.
    ['run', ['--node-args', '--no-flush-bytecode'], /run\.js: .*--node-args.* goes after "=" \(--name=-value\)/],
    ['instructions', ['--requests', 'many'], /instructions\.js: option --requests takes a number \(default 2000\), got "many"/],
    ['instructions', ['--only'], /instructions\.js: Option '--only <value>' argument missing/],
    ['young-gc', ['--requests', 'many'], /young-gc\.js: option --requests takes a number \(default 20000\), got "many"/],
    ['young-gc', ['--only', 'gql-pet,gql-pets'], /young-gc\.js: unknown scenario gql-pets \(one of floor, /],
  ] as const) {
    const result = tool(name, ...args);
    assert.equal(result.status, 2, `${name} ${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, says);
    assert.match(result.stderr, /--help prints the options and examples/);
    assert.equal(result.stderr.trimEnd().split('\n').length, 2, `one line and the hint: ${result.stderr}`);
    assert.doesNotMatch(result.stderr, /^\s+at /m, 'no stack trace');
    assert.equal(result.stdout, '');
  }
});
