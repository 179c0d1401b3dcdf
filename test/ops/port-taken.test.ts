/**
 * A start that fails because the port is taken says only that: one line naming the port and what to
 * do, a non-zero exit code, and nothing about a shutdown that never began.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { startService } from './support.js';

describe('ops: a start on a port already taken', () => {
  it('when the port is in use, then the service exits non-zero with one clear line naming the port, and no shutdown or draining line', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    const s = await startService({}, { port, listening: false });
    try {
      const code = await s.exited;
      assert.notEqual(code, 0, 'the exit code');
      assert.equal(
        s.stderr().trim(),
        `Petstore could not start: port ${port} on 127.0.0.1 is already in use; set PORT to a free port (or stop what listens on it).`,
      );
      assert.doesNotMatch(s.stdout() + s.stderr(), /shutdown|readiness|draining/i, 'nothing about a shutdown that never began');
    } finally {
      s.child.kill('SIGKILL');
      holder.close();
      s.cleanup();
    }
  });
});
