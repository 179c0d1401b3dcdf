/** Helpers for the contract tests: running the third-party CLIs installed in node_modules. */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { projectPath } from '../../src/project-path.js';

const require = createRequire(import.meta.url);
const execFileAsync = promisify(execFile);

// The test runner sets NODE_ENV=test, under which graphql-codegen's reporter prints no error details.
const { NODE_ENV: _testEnv, ...inherited } = process.env;

/** No telemetry, no update checks: CI reaches no network but the npm registry. */
export const QUIET_CLI_ENV: NodeJS.ProcessEnv = {
  ...inherited,
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_UPDATE_NOTIFIER: '1',
  DO_NOT_TRACK: '1',
  // Plain, complete output (graphql-codegen prints validation errors only with its CI renderer).
  CI: 'true',
};

/** Absolute path of a package's bin script, run with this Node (no npx, no shell). */
export function binOf(pkg: string, name: string): string {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const manifest = require(manifestPath) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin[name];
  if (!bin) throw new Error(`${pkg} has no bin named ${name}`);
  return join(dirname(manifestPath), bin);
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a package's CLI in the project root; resolves with its exit code instead of throwing. */
export async function runCli(pkg: string, name: string, args: string[], options: { cwd?: string } = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [binOf(pkg, name), ...args], {
      cwd: options.cwd ?? projectPath('.'),
      env: QUIET_CLI_ENV,
      maxBuffer: 32 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw error;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
