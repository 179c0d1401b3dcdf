/**
 * L0, the physical floor: a bare `node:http` server answering the same JSON bytes as the service's
 * REST by-ids response, from memory. Nothing this machine can serve over HTTP is much faster.
 * Usage (by bench/run.ts): BODY_FILE=… node dist/bench/l0-server.js → prints `listening PORT`.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';

const body = readFileSync(process.env.BODY_FILE ?? '');
const headers = { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(body.length) };
const server = createServer((req, res) => {
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
