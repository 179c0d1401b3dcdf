/**
 * What a response's header lines cost the server that writes them, apart from everything else: two bare `node:http`
 * servers answer the same JSON body, one with 5 header lines (type, length and Node's own Date, Connection and
 * Keep-Alive), the other with the 16 more a REST read of the service carries (same names and values; F itself sends 5
 * of them too: the four X-RateLimit lines and the request id). Each is loaded in turns, and its CPU per
 * request read from /proc, with its main thread's sleeps (voluntary context switches) per request: a server that
 * sleeps waits on its client, and then pays for the wake-ups too.
 *
 *   npm run build && node dist/bench/header-lines.js [--client autocannon|raw] [--rounds 8] [--duration 3] [--connections 32] [--big lines|body]
 *
 * `--client raw`: a client that reads each answer as a count of bytes (its length is known from the first one) and
 * parses no header, so the client's own work does not grow with the header block. `--big body`: the second server
 * sends the 5 lines and a body longer by exactly the bytes of the 16 lines (the bytes alone).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { benchArgs } from './cli.js';
import autocannon from 'autocannon';
import { cpuMs, mainThreadSleeps } from './idle.js';
import { REST_ANSWER_LINES } from './rest-answer-lines.js';

/** The 16 header lines a REST read carries beyond F's, as one flat list of names and values. */
const REST_LINES = REST_ANSWER_LINES.flat();

if (process.env.HEADER_LINES_SERVER) {
  // The server: `small`, `lines` (+ REST's lines) or `body` (+ as many bytes in the body).
  const variant = process.env.HEADER_LINES_SERVER;
  const pets = Array.from({ length: 10 }, (_, i) => ({ id: 1000 + i, name: `Pet number ${i} of the bench`, categoryId: 3, status: 'available' }));
  // `name: value\r\n` for each of the 16 lines.
  let extraBytes = 0;
  for (let i = 0; i < REST_LINES.length; i += 2) extraBytes += REST_LINES[i]!.length + 2 + REST_LINES[i + 1]!.length + 2;
  const body = Buffer.from(JSON.stringify({ items: pets, nextCursor: null, ...(variant === 'body' ? { pad: 'x'.repeat(extraBytes) } : {}) }));
  const headers = ['content-type', 'application/json; charset=utf-8', 'content-length', String(body.length), ...(variant === 'lines' ? REST_LINES : [])];
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, headers);
    res.end(body);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`));
} else {
  const { values: args } = benchArgs(import.meta.url, {
    options: {
      client: { type: 'string', default: 'autocannon' },
      rounds: { type: 'string', default: '8' },
      duration: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      big: { type: 'string', default: 'lines' },
    },
  });
  const seconds = Number(args.duration);
  const connections = Number(args.connections);
  const children: ChildProcess[] = [];
  const start = (variant: string) =>
    new Promise<{ child: ChildProcess; port: number }>((resolve, reject) => {
      const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], { env: { ...process.env, HEADER_LINES_SERVER: variant }, stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(child);
      child.stdout!.once('data', (d: Buffer) => {
        const port = /listening (\d+)/.exec(String(d))?.[1];
        if (port) resolve({ child, port: Number(port) });
        else reject(new Error(`the ${variant} server printed ${String(d)}`));
      });
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`the ${variant} server exited (${code}) before listening`)));
    });
  const REQUEST = Buffer.from('GET /v1/pets?ids=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: bench\r\n\r\n');

  /**
   * The raw client: `connections` keep-alive sockets, one request at a time each; every answer is as long as the first
   * (the same body, and a Date line whose length does not change). A socket that closes or fails ends the run with an error.
   */
  async function rawLoad(port: number): Promise<number> {
    const first = await new Promise<Buffer>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(REQUEST));
      socket.once('error', reject);
      socket.once('close', () => reject(new Error('the server closed the connection before its first answer')));
      let got = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        got = Buffer.concat([got, d]);
        const end = got.indexOf('\r\n\r\n');
        const length = end < 0 ? NaN : Number(/content-length: (\d+)/i.exec(got.subarray(0, end).toString())?.[1]);
        if (got.length >= end + 4 + length) {
          socket.destroy();
          resolve(got.subarray(0, end + 4 + length));
        }
      });
    });
    const length = first.length;
    const until = Date.now() + seconds * 1000;
    let answers = 0;
    await Promise.all(
      Array.from(
        { length: connections },
        () =>
          new Promise<void>((resolve, reject) => {
            const socket = net.connect(port, '127.0.0.1', () => socket.write(REQUEST));
            let pending = 0;
            let done = false;
            socket.on('data', (d: Buffer) => {
              pending += d.length;
              while (pending >= length) {
                pending -= length;
                answers++;
                if (Date.now() < until) socket.write(REQUEST);
                else {
                  done = true;
                  socket.destroy();
                  return resolve();
                }
              }
            });
            socket.once('error', reject);
            socket.once('close', () => (done ? undefined : reject(new Error('the server closed a connection during the load'))));
          }),
      ),
    );
    return answers;
  }
  const load = async (port: number) =>
    args.client === 'raw' ? rawLoad(port) : (await autocannon({ url: `http://127.0.0.1:${port}/v1/pets?ids=1`, connections, duration: seconds })).requests.total;

  try {
    const servers = { small: await start('small'), big: await start(args.big) };
    for (const server of Object.values(servers)) await load(server.port);
    const results: Record<string, number[]> = { small: [], big: [] };
    process.stdout.write(`server CPU per request, ${args.client} client, ${connections} connections, big = ${args.big === 'body' ? 'the bytes of 16 lines in the body' : '16 more header lines'}, node ${process.version}\n`);
    for (let round = 0; round < Number(args.rounds); round++) {
      for (const name of round % 2 ? (['big', 'small'] as const) : (['small', 'big'] as const)) {
        const { child, port } = servers[name];
        const cpu0 = cpuMs(child.pid!);
        const sleeps0 = mainThreadSleeps(child.pid!);
        const answers = await load(port);
        const us = ((cpuMs(child.pid!) - cpu0) * 1000) / answers;
        results[name]!.push(us);
        process.stdout.write(`  round ${round + 1} ${name.padEnd(5)} ${us.toFixed(1)} µs/request, ${Math.round(answers / seconds)}/s, ${((mainThreadSleeps(child.pid!) - sleeps0) / answers).toFixed(3)} sleeps/request\n`);
      }
    }
    const median = (a: number[]) => {
      const sorted = [...a].sort((x, y) => x - y);
      const middle = sorted.length >> 1;
      return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
    };
    process.stdout.write(`median: small ${median(results.small!).toFixed(1)} µs, big ${median(results.big!).toFixed(1)} µs (big − small ${(median(results.big!) - median(results.small!)).toFixed(1)} µs)\n`);
  } finally {
    for (const child of children) child.kill();
  }
}
