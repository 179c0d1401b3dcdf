// Prints what holds a process's memory, for docs/PERFORMANCE.md "Memory". Preload it into the service:
//   NODE_ENV=production DATABASE_URL=sqlite:FILE node --expose-gc --import ./bench/memory-probe.mjs dist/src/main.js
// PROBE_AFTER_MS (default 5000) after start, and again on each SIGWINCH (kill -WINCH PID, e.g. after a load):
// RSS, then the V8 heap as it is and after two full GCs (the live heap), per space.
import { getHeapSpaceStatistics } from 'node:v8';

const mb = (bytes) => (bytes / 1048576).toFixed(1);
const spaces = () =>
  getHeapSpaceStatistics()
    .filter((s) => s.space_size > 0)
    .map((s) => `${s.space_name} ${mb(s.space_size)}/${mb(s.space_used_size)}`)
    .join(', ');
function probe(label) {
  const before = process.memoryUsage();
  const heapBefore = spaces();
  globalThis.gc?.();
  globalThis.gc?.();
  const after = process.memoryUsage();
  process.stderr.write(
    `memory-probe ${label}: RSS ${mb(before.rss)} MB; heap total/used ${mb(before.heapTotal)}/${mb(before.heapUsed)} MB (${heapBefore})` +
      `; after two full GCs: heap used ${mb(after.heapUsed)} MB, RSS ${mb(after.rss)} MB, external ${mb(after.external)} MB\n`,
  );
}
setTimeout(() => probe('after start'), Number(process.env.PROBE_AFTER_MS ?? 5000)).unref();
process.on('SIGWINCH', () => probe('on SIGWINCH'));
