import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { projectPath } from '../../src/project-path.js';

const run = promisify(execFile);

describe('npm start: the compile before the first start (issue 13, item 1)', () => {
  it('when the build script runs, then it says it compiles; run again with nothing changed, it says so and compiles nothing; after an edit it compiles again', async () => {
    // A two-file project of its own, so this test never rewrites the dist/ the suite runs from.
    const dir = mkdtempSync(join(tmpdir(), 'petstore-build-'));
    try {
      mkdirSync(join(dir, 'src'));
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: { module: 'NodeNext', outDir: 'dist', rootDir: '.', types: [] }, include: ['src'] }),
      );
      writeFileSync(join(dir, 'src', 'main.ts'), 'export const answer: number = 41;\n');
      const build = async () => (await run(process.execPath, [projectPath('scripts/build.mjs'), '--if-changed'], { cwd: dir })).stdout;

      const first = await build();
      assert.match(first, /compiling TypeScript into dist\//, first);
      assert.match(first, /compiled in [\d.]+ s/, first);
      const output = join(dir, 'dist', 'src', 'main.js');
      const builtAt = statSync(output).mtimeMs;

      const second = await build();
      assert.match(second, /dist\/ is up to date .*not compiling/, second);
      assert.doesNotMatch(second, /compiling TypeScript/, second);
      assert.equal(statSync(output).mtimeMs, builtAt, 'nothing was written');

      writeFileSync(join(dir, 'src', 'main.ts'), 'export const answer: number = 42;\n');
      const third = await build();
      assert.match(third, /compiling TypeScript into dist\//, third);
      assert.match(readFileSync(output, 'utf8'), /answer = 42/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('when npm start runs on a built project, then it says the compile is skipped and the service answers', async () => {
    // `npm test` and `npm run build` leave dist/ up to date, as `npm install` (its prepare step) does.
    const dir = mkdtempSync(join(tmpdir(), 'petstore-npm-start-'));
    const key = `psk_${randomBytes(24).toString('base64url')}`;
    const child = spawn('npm', ['start'], {
      cwd: projectPath('.'),
      env: {
        ...process.env,
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'warn',
        DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
        ADMIN_API_KEY: key,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: npm, its shell and the service are stopped together
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const closed = new Promise((resolve) => child.on('close', resolve)); // every process holding its output is gone
    try {
      const deadline = Date.now() + 60_000;
      let url: string | undefined;
      while (!url && Date.now() < deadline && child.exitCode === null) {
        url = /Petstore API on (http:\/\/\S+)\/v1/.exec(out)?.[1];
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(url, `npm start never announced its address:\n${out}`);
      assert.match(out, /dist\/ is up to date .*not compiling/, out);
      assert.doesNotMatch(out, /compiling TypeScript/, out);
      const res = await fetch(`${url}/v1/account`, { headers: { 'x-api-key': key } });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { role: string }).role, 'staff');
    } finally {
      process.kill(-child.pid!, 'SIGTERM'); // as Ctrl-C reaches the terminal's whole foreground group
      await closed;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
