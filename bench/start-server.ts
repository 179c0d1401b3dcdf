/**
 * Starts a server of the bench tools as `npm run bench` starts it: its start command's node flags (plus `nodeArgs`),
 * output to a log file in `work`, resolved with its URL once it prints it. Used by threads.ts and allocations.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../src/project-path.js';
import { startNodeArgs } from './scenarios.js';

export async function startServer(name: string, script: string, env: Record<string, string>, work: string, nodeArgs: string[] = []): Promise<{ child: ChildProcess; url: string }> {
  const logFile = join(work, `${name}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(process.execPath, [...startNodeArgs(projectPath('.')), ...nodeArgs, projectPath(script)], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const out = readFileSync(logFile, 'utf8');
    const api = /Petstore API on (http:\/\/[^\s]+)\/v1/.exec(out);
    const port = /listening (\d+)/.exec(out);
    if (api || port) return { child, url: api ? api[1]! : `http://127.0.0.1:${port![1]}` };
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill();
      throw new Error(`${name} did not start:\n${out.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The two servers the tools compare, on a copy of the bench database: `floor` (F, bench/ladder-server.ts) or the
 * service (any other name). `env` is added to either's environment (F ignores what it does not read).
 */
export function benchServer(name: string, file: string, key: string, work: string, env: Record<string, string>, nodeArgs: string[] = []) {
  return name === 'floor'
    ? startServer(name, 'dist/bench/ladder-server.js', { RUNG: 'floor', DATABASE: file, KEY: key, ...env }, work, nodeArgs)
    : startServer(name, 'dist/src/main.js', { NODE_ENV: 'production', HOST: '127.0.0.1', PORT: '0', DATABASE_URL: `sqlite:${file}`, BAN_THRESHOLD: '1000000', ...env }, work, nodeArgs);
}
