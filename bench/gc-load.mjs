// The same fixed workload on one build under different node flags, one service at a time: RSS and V8's
// collections (--trace-gc) per variant, for docs/PERFORMANCE.md "Memory". A fixed number of operations, not a
// duration, so the count of collections compares across variants even when the machine is busy (their
// milliseconds still move with the load). After `npm run build`:
//   node bench/gc-load.mjs '' '--max-semi-space-size=8' '--max-semi-space-size=4'
// Each argument is one variant's node flags (space-separated; '' for node's defaults, as given: the start
// command's flags are not added). OPS (default 5000) operations of each scenario (SCENARIOS, default
// rest-ids,gql-ids,rest-page,gql-page,rest-order) as warm-up, then again as the measured pass.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { seedBenchDatabase } from '../dist/bench/seed.js';
import { keyedRequests, SCENARIOS } from '../dist/bench/scenarios.js';

const OPS = Number(process.env.OPS ?? 5000);
const wanted = (process.env.SCENARIOS ?? 'rest-ids,gql-ids,rest-page,gql-page,rest-order').split(',');
const scenarios = wanted.map((id) => SCENARIOS.find((s) => s.id === id && s.service === 'memory') ?? process.exit(console.error(`no scenario ${id}`) ?? 1));
const variants = process.argv.length > 2 ? process.argv.slice(2) : [''];
const work = mkdtempSync(join(tmpdir(), 'petstore-gc-load-'));
const mb = (kb) => `${(kb / 1024).toFixed(0)} MB`;
const rssKb = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

try {
  const db = await seedBenchDatabase(join(work, 'seed.db'));
  for (const [i, variant] of variants.entries()) {
    const file = join(work, `v${i}.db`);
    copyFileSync(db.file, file);
    const flags = variant.split(' ').filter(Boolean);
    const child = spawn(process.execPath, ['--trace-gc', ...flags, new URL('../dist/src/main.js', import.meta.url).pathname], {
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', DATABASE_URL: `sqlite:${file}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const url = await new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`service exited (${code}):\n${out.slice(-2000)}`)));
      child.stdout.on('data', () => {
        const m = /Petstore API on (http:\/\/\S+)\/v1/.exec(out);
        if (m) resolve(m[1]);
      });
    });
    const rss = [];
    for (const pass of ['warm-up', 'measured']) {
      for (const s of scenarios) {
        const { key, requests } = keyedRequests(s, { enterprise: db.enterpriseKey, free: db.freeKey, many: db.manyKeys });
        await autocannon({ url, connections: 32, amount: OPS * s.requestsPerOp, headers: { 'X-API-Key': key }, requests });
      }
      rss.push(`${pass} ${mb(rssKb(child.pid))}`);
    }
    const gc = (re) => {
      const lines = out.split('\n').filter((l) => re.test(l));
      const ms = lines.reduce((a, l) => a + Number(/, ([\d.]+) \/ [\d.]+ ms/.exec(l)?.[1] ?? 0), 0);
      return `${lines.length} (${(ms / 1000).toFixed(1)} s)`;
    };
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    console.log(`[${variant || 'node defaults'}] RSS after ${rss.join(', after ')}; over its life: scavenges ${gc(/: Scavenge/)}, mark-compacts ${gc(/: Mark-Compact/)}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
