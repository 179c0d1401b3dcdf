/**
 * A JSON request body is read whole however it arrives (src/http/body.ts, raw-body): in the packet of its headers,
 * or in pieces with pauses between them, with Content-Length or chunked, the headers arriving with part of the body,
 * a UTF-8 character split across two pieces; and a connection kept alive carries the next request after each body,
 * pipelined requests included.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Socket, connect } from 'node:net';
import { startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';

/** Writes `pieces` to `socket` with `pauseMs` between them. */
async function writeSlowly(socket: Socket, pieces: Buffer[], pauseMs: number): Promise<void> {
  for (const [i, piece] of pieces.entries()) {
    if (i > 0) await new Promise((r) => setTimeout(r, pauseMs));
    socket.write(piece);
  }
}

/** Reads HTTP/1.1 answers off `socket` as they complete (Content-Length framed, as the service answers). */
function answers(socket: Socket): () => Promise<{ status: number; body: string }> {
  let buffer = Buffer.alloc(0);
  const waiting: Array<() => void> = [];
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (const wake of waiting.splice(0)) wake();
  });
  return async () => {
    for (;;) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = buffer.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length >= end + 4 + length) {
          const body = buffer.subarray(end + 4, end + 4 + length).toString('utf8');
          buffer = buffer.subarray(end + 4 + length);
          return { status: Number(head.split(' ')[1]), body };
        }
      }
      await new Promise<void>((wake) => waiting.push(wake));
    }
  };
}

describe('HTTP request bodies: read whole however they arrive', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  const open = async () => {
    const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    return { socket, next: answers(socket) };
  };
  const head = (path: string, framing: string) =>
    Buffer.from(`POST ${path} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${t.adminKey}\r\nContent-Type: application/json\r\n${framing}\r\n`);

  it('when a body comes in pieces with pauses, with Content-Length or chunked, a character split between two pieces, then it is read whole', async () => {
    const { socket, next } = await open();
    try {
      for (const chunked of [false, true]) {
        const name = `Slow 🐶 ${chunked ? 'chunked' : 'sized'}`;
        const body = Buffer.from(JSON.stringify({ name }));
        const split = body.indexOf(Buffer.from('🐶')) + 2; // inside the emoji's four bytes
        const parts = [body.subarray(0, split), body.subarray(split)];
        // The headers come with the first part of the body, so the request starts with part of its body unread.
        const framed = chunked
          ? parts.map((p) => Buffer.concat([Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')]))
          : parts;
        const pieces = [
          Buffer.concat([
            head('/v1/categories', chunked ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${body.length}\r\n`),
            framed[0]!,
          ]),
          chunked ? Buffer.concat([framed[1]!, Buffer.from('0\r\n\r\n')]) : framed[1]!,
        ];
        await writeSlowly(socket, pieces, 40);
        const answer = await next();
        assert.equal(answer.status, 201, answer.body);
        assert.equal(JSON.parse(answer.body).name, name);
      }
    } finally {
      socket.destroy();
    }
  });

  it('when bodies arrive whole on a kept-alive connection (REST and GraphQL, one after the other), then each is read and the connection carries the next', async () => {
    const { socket, next } = await open();
    try {
      for (let i = 0; i < 3; i++) {
        const rest = Buffer.from(JSON.stringify({ name: `Whole ${i} é` }));
        socket.write(Buffer.concat([head('/v1/categories', `Content-Length: ${rest.length}\r\n`), rest]));
        const created = await next();
        assert.equal(created.status, 201, created.body);
        assert.equal(JSON.parse(created.body).name, `Whole ${i} é`);
        const graphql = Buffer.from(
          JSON.stringify({
            query: 'query ($id: ID!) { category(id: $id) { name } }',
            variables: { id: globalId('Category', JSON.parse(created.body).id) },
          }),
        );
        socket.write(Buffer.concat([head('/graphql', `Content-Length: ${graphql.length}\r\n`), graphql]));
        const read = await next();
        assert.equal(read.status, 200, read.body);
        assert.equal(JSON.parse(read.body).data.category.name, `Whole ${i} é`);
      }
      // Two requests in one write (pipelined): the first body must not swallow the second request.
      const a = Buffer.from(JSON.stringify({ name: 'Piped A' }));
      const b = Buffer.from(JSON.stringify({ name: 'Piped B' }));
      socket.write(
        Buffer.concat([
          head('/v1/categories', `Content-Length: ${a.length}\r\n`),
          a,
          head('/v1/categories', `Content-Length: ${b.length}\r\n`),
          b,
        ]),
      );
      const [first, second] = [await next(), await next()];
      assert.deepEqual(
        [first.status, JSON.parse(first.body).name, second.status, JSON.parse(second.body).name],
        [201, 'Piped A', 201, 'Piped B'],
      );
    } finally {
      socket.destroy();
    }
  });
});
