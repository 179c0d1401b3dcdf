// Runs every compiled test file with node's test runner. Extra arguments are passed through, so
// `npm test -- --test-name-pattern=idempotency` works. TEST_FILES=regex narrows the files,
// TEST_EXCLUDE=regex leaves some out.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = 'dist/test';
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    // Only compiled tests whose source still exists: tsc never deletes dist/ files of removed sources.
    else if (name.endsWith('.test.js') && existsSync(path.replace(/^dist\//, '').replace(/\.js$/, '.ts'))) files.push(path);
  }
})(root);
const only = process.env.TEST_FILES ? new RegExp(process.env.TEST_FILES) : null;
const except = process.env.TEST_EXCLUDE ? new RegExp(process.env.TEST_EXCLUDE) : null;
const selected = files.filter((f) => (!only || only.test(f)) && !except?.test(f)).sort();
if (selected.length === 0) {
  console.error('No test files found under dist/test.');
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
// A hang (something left open keeps a test process alive) fails the run instead of stalling CI.
const minutes = Number(process.env.TEST_TIMEOUT_MINUTES ?? 35);
const result = spawnSync(process.execPath, ['--test', `--test-concurrency=${concurrency}`, ...process.argv.slice(2), ...selected], {
  stdio: 'inherit',
  env: { ...process.env, NODE_ENV: 'test' },
  timeout: minutes * 60_000,
  killSignal: 'SIGKILL',
});
if (result.error?.code === 'ETIMEDOUT') console.error(`\nThe test run exceeded ${minutes} minutes and was stopped (TEST_TIMEOUT_MINUTES).`);
process.exit(result.status ?? 1);
