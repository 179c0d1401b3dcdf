import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectPath } from '../../src/project-path.js';

/** Collects an app's log lines (pino JSON) for assertions. */
export class LogCapture {
  readonly lines: string[] = [];
  write(line: string) {
    this.lines.push(line);
  }
  get text(): string {
    return this.lines.join('');
  }
  records(): Array<Record<string, any>> {
    return this.lines
      .flatMap((l) => l.split('\n'))
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  }
  /** The request log line of one request id. */
  requestLine(requestId: string): Record<string, any> | undefined {
    return this.records().find((r) => r.msg === 'request' && r.requestId === requestId);
  }
}

/** One sample of a Prometheus text exposition, by metric name and exact labels; undefined if absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) found[pair[1]!] = pair[2]!;
    if (Object.entries(labels).every(([k, v]) => found[k] === v) && Object.keys(found).length === Object.keys(labels).length)
      return Number(m[3]);
  }
  return undefined;
}

/** A raw HTTP/1.1 connection: send bytes when the test decides, read everything the server sends. */
export class RawConnection {
  private data = '';
  private closed: Promise<void>;
  readonly socket: Socket;
  error?: Error;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (this.data += chunk));
    this.closed = new Promise((resolve) => {
      socket.on('close', () => resolve());
      socket.on('error', (e) => (this.error = e));
    });
  }

  static open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) }, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Forgets what was received so far (the next response() reads what comes after). */
  discard() {
    this.data = '';
  }

  send(text: string | Buffer) {
    this.socket.write(text);
  }

  /** Resolves with the first complete response (status, headers, body by Content-Length). */
  async response(): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    for (;;) {
      const parsed = parseResponse(this.data);
      if (parsed) return parsed;
      if (this.socket.destroyed || this.socket.readableEnded) {
        const last = parseResponse(this.data, true);
        if (last) return last;
        throw new Error(`connection closed without a complete response: ${JSON.stringify(this.data.slice(0, 200))}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Resolves once the server has sent `text` (e.g. `100 Continue`). */
  async until(text: string): Promise<void> {
    while (!this.data.includes(text)) {
      if (this.socket.destroyed)
        throw new Error(`connection closed before ${JSON.stringify(text)}: ${JSON.stringify(this.data.slice(0, 200))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Resolves with `n` complete responses (after any interim 1xx), in order. */
  async responses(n: number): Promise<Array<{ status: number; headers: Record<string, string>; body: string }>> {
    for (;;) {
      const all = parseAll(this.data.replace(/HTTP\/1\.1 1\d\d [^\r]*\r\n\r\n/g, ''));
      if (all.length >= n) return all.slice(0, n);
      if (this.socket.destroyed)
        throw new Error(`connection closed after ${all.length} of ${n} responses: ${JSON.stringify(this.data.slice(0, 300))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Resolves when the server has closed the connection; returns everything it sent. */
  async untilClosed(): Promise<string> {
    await this.closed;
    return this.data;
  }

  close() {
    this.socket.destroy();
  }
}

function parseAll(data: string) {
  const out: Array<{ status: number; headers: Record<string, string>; body: string }> = [];
  let rest = data;
  for (;;) {
    const r = parseResponse(rest);
    if (!r || r.headers['content-length'] === undefined) return out;
    const headEnd = rest.indexOf('\r\n\r\n') + 4;
    const length = Number(r.headers['content-length']);
    const body = Buffer.from(rest.slice(headEnd)).subarray(0, length).toString();
    out.push({ ...r, body });
    rest = rest.slice(headEnd + body.length);
  }
}

function parseResponse(data: string, ended = false) {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...headerLines] = data.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const h of headerLines) {
    const i = h.indexOf(':');
    headers[h.slice(0, i).toLowerCase()] = h.slice(i + 1).trim();
  }
  const body = data.slice(end + 4);
  const length = headers['content-length'];
  if (length !== undefined && Buffer.byteLength(body) < Number(length)) return undefined;
  if (length === undefined && !ended && headers['transfer-encoding']) return undefined;
  return { status: Number(statusLine!.split(' ')[1]), headers, body };
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

export interface Service {
  child: ChildProcess;
  url: string;
  key: string;
  /** Everything it wrote, stdout and stderr as they came. */
  output: () => string;
  /** What it wrote to stdout, and to stderr, each alone. */
  stdout: () => string;
  stderr: () => string;
  /**
   * Resolves with the first JSON log line whose msg starts with `msg` (and that `where` accepts), waiting for it:
   * lines go out in batches, up to LOG_FLUSH_MS after they were logged. Fails after 30 s (a start on a loaded machine) or when the process exits.
   */
  logLine(msg: string, where?: (record: Record<string, any>) => boolean): Promise<Record<string, any>>;
  exited: Promise<number | null>;
  cleanup(): void;
}

export interface ServiceOptions {
  /** A database to (re)use, such as the one of a killed instance; default a fresh SQLite file. */
  databaseUrl?: string;
  /** The staff key (ADMIN_API_KEY, used on an empty database); default a new one. */
  key?: string;
  /** The port to listen on (PORT); default a free one. */
  port?: number;
  /** Resolve once it logs `petstore listening` (the default), or at once: for a start that is meant to fail. */
  listening?: boolean;
}

/** `node dist/src/main.js` on a fresh SQLite file (or the given database) and a free port, as an operator would run it. */
export async function startService(env: Record<string, string>, options: ServiceOptions = {}): Promise<Service> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-service-'));
  const port = options.port ?? (await freePort());
  const key = options.key ?? `psk_${randomBytes(24).toString('base64url')}`;
  const child = spawn(process.execPath, [projectPath('dist/src/main.js')], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: options.databaseUrl ?? `sqlite:${join(dir, 'petstore.db')}`,
      ADMIN_API_KEY: key,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => {
    out += d;
    stdout += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const logLine = async (msg: string, where: (record: Record<string, any>) => boolean = () => true) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const record = JSON.parse(line);
        if (typeof record.msg === 'string' && record.msg.startsWith(msg) && where(record)) return record;
      }
      if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}):\n${out}`);
      if (Date.now() > deadline) throw new Error(`no log line "${msg}" in 30 s:\n${out.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  if (options.listening ?? true) await logLine('petstore listening');
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    key,
    output: () => out,
    stdout: () => stdout,
    stderr: () => stderr,
    logLine,
    exited,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Headers sent, body held back: the server has the request (it answered 100 Continue) and waits for the rest. */
export async function heldRequest(
  s: Pick<Service, 'url' | 'key'>,
  path: string,
  body: string,
  headers = '',
): Promise<{ conn: RawConnection; rest: string }> {
  const conn = await RawConnection.open(s.url);
  const split = Math.floor(body.length / 2);
  conn.send(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${s.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}Expect: 100-continue\r\n\r\n${body.slice(0, split)}`,
  );
  await conn.until('100 Continue');
  return { conn, rest: body.slice(split) };
}
