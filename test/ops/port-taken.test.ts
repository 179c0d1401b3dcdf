/**
 * A start that fails because the port is taken says only that: one line naming the port and what to
 * do, a non-zero exit code, and nothing about a shutdown that never began.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { projectPath } from '../../src/project-path.js';

describe('ops: a start on a port already taken', () => {
  it('when the port is in use, then the service exits non-zero with one clear line naming the port, and no shutdown or draining line', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    const dir = mkdtempSync(join(tmpdir(), 'petstore-port-'));
    try {
      const child = spawn(process.execPath, [projectPath('dist/src/main.js')], {
        cwd: dir,
        env: {
          PATH: process.env.PATH ?? '',
          NODE_ENV: 'production',
          LOG_LEVEL: 'info',
          HOST: '127.0.0.1',
          PORT: String(port),
          DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
          ADMIN_API_KEY: `psk_${randomBytes(24).toString('base64url')}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d) => (stdout += d));
      child.stderr!.on('data', (d) => (stderr += d));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      assert.notEqual(code, 0, 'the exit code');
      assert.equal(stderr.trim(), `Petstore could not start: port ${port} on 127.0.0.1 is already in use; set PORT to a free port (or stop what listens on it).`);
      assert.doesNotMatch(stdout + stderr, /shutdown|readiness|draining/i, 'nothing about a shutdown that never began');
    } finally {
      holder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
