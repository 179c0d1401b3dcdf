/**
 * Promises created per request by the service (REST's and GraphQL's read by ids) and by F: on Node 20 and 22 each one
 * costs a call into JavaScript while any hook-based AsyncLocalStorage is on (src/db/orm-contexts.ts), and some work
 * on every runtime.
 *
 *   npm run build && node dist/bench/promises.js [--only floor,rest-ids,gql-ids] [--requests 4000]
 *
 * Starts each server as `npm run bench` does (the service after one write: `benchServer`), sends half of `--requests` as warm-up,
 * then `--requests`, and divides the promises created meanwhile by the requests answered.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './cli.js';
import autocannon from 'autocannon';
import { projectPath } from '../src/project-path.js';
import { seedBenchDatabase } from './seed.js';
import { benchServer, checkGraphQLAnswer, idsRead } from './start-server.js';

const { values: args } = benchArgs(import.meta.url, { options: { only: { type: 'string', default: 'floor,rest-ids,gql-ids' }, requests: { type: 'string', default: '4000' } } });
const REQUESTS = Number(args.requests);
const log = (line: string) => process.stdout.write(`${line}\n`);
const work = mkdtempSync(join(tmpdir(), 'petstore-promises-'));
try {
  const db = await seedBenchDatabase(join(work, 'seed.db'));
  log(`Promises created per request (${REQUESTS} requests after ${REQUESTS / 2} of warm-up, node ${process.version})`);
  for (const name of args.only.split(',')) {
    const file = join(work, `${name}.db`);
    copyFileSync(db.file, file);
    const server = await benchServer(name, file, db, work, { nodeArgs: ['--import', projectPath('dist/bench/promise-counter.js')] });
    try {
      const graphql = name === 'gql-ids';
      // A GraphQL answer is a 200 even with errors: one is checked before the count.
      if (graphql) await checkGraphQLAnswer(server.url, db.enterpriseKey);
      const request = idsRead(server.url, db.enterpriseKey, graphql);
      const send = async (amount: number) => {
        const result = await autocannon({ ...request, connections: 8, amount });
        if (result.non2xx || result.errors) throw new Error(`${name}: ${result.non2xx} answers not 2xx, ${result.errors} errors`);
        return result.requests.total;
      };
      const counted = async () => {
        const before = readFileSync(join(work, `${name}.log`), 'utf8').length;
        server.child.kill('SIGUSR2');
        for (let i = 0; i < 100; i++) {
          const line = /promises so far: (\d+)/.exec(readFileSync(join(work, `${name}.log`), 'utf8').slice(before));
          if (line) return Number(line[1]);
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`${name}: no count from bench/promise-counter.ts`);
      };
      await send(REQUESTS / 2);
      const start = await counted();
      const answered = await send(REQUESTS);
      log(`  ${name.padEnd(9)} ${(((await counted()) - start) / answered).toFixed(1)} promises per request`);
    } finally {
      server.child.kill('SIGTERM');
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
