import { describe, it, before, after, mock } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startApp, createAccount, type TestApp } from '../helpers/app.js';
import { LogCapture, startService, type Service } from './support.js';
import { pino } from 'pino';
import { flatLineLogger, loggerOptions } from '../../src/observability/logger.js';

describe('ops: request logs', () => {
  let t: TestApp;
  const logs = new LogCapture();
  before(async () => {
    t = await startApp({ env: { LOG_LEVEL: 'debug' }, logStream: logs });
  });
  after(() => t.close());

  it('when a REST request is answered, then one JSON line names its request id, route template, facade, status, duration and account', async () => {
    const res = await t.admin.get('/v1/categories/999', { headers: { 'x-request-id': 'ops-log-rest-1' } });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('x-request-id'), 'ops-log-rest-1');
    const lines = logs.records().filter((r) => r.requestId === 'ops-log-rest-1' && r.msg === 'request');
    assert.equal(lines.length, 1);
    const line = lines[0]!;
    assert.equal(line.method, 'GET');
    assert.equal(line.route, 'GET /v1/categories/{categoryId}');
    assert.equal(line.facade, 'rest');
    assert.equal(line.status, 404);
    assert.equal(line.errorCode, 'NOT_FOUND');
    assert.equal(line.accountId, 1);
    assert.equal(typeof line.durationMs, 'number');
    assert.equal(line.service, 'petstore');
  });

  it('when a GraphQL request is answered, then its line has the facade and the operation name', async () => {
    const res = await t.admin.graphql('query WhoAmI { viewer { name } }', undefined, { headers: { 'x-request-id': 'ops-log-gql-1' } });
    assert.equal(res.status, 200);
    const line = logs.requestLine('ops-log-gql-1');
    assert.ok(line, 'no request line');
    assert.equal(line.facade, 'graphql');
    assert.equal(line.operationName, 'WhoAmI');
    assert.equal(line.route, 'POST /graphql');
    assert.equal(line.status, 200);
  });

  it('when X-Request-Id is malformed or too long, then a fresh id is generated, echoed and logged', async () => {
    for (const given of ['bad id with spaces', 'x'.repeat(129), '<script>']) {
      const res = await t.anonymous.get('/healthz', { headers: { 'x-request-id': given }, skipContract: true });
      const id = res.headers.get('x-request-id')!;
      assert.notEqual(id, given);
      assert.match(id, /^[0-9a-f-]{36}$/);
      assert.ok(logs.requestLine(id), `no line for ${id}`);
    }
  });

  it('when requests carry API keys (valid, unknown, newly created), then no key appears anywhere in the log', async () => {
    const customer = await createAccount(t, { role: 'customer' });
    await customer.client.get('/v1/account');
    await customer.client.graphql('{ viewer { apiKey { prefix } } }');
    const unknown = `psk_${'Z'.repeat(30)}`;
    await t.anonymous.get('/v1/account', { key: unknown });
    await t.anonymous.graphql('{ viewer { name } }', undefined, { key: unknown });
    // The key also travels in a body: it must not be logged from there either.
    await t.admin.post('/v1/categories', { name: customer.key });
    assert.ok(logs.lines.length > 5);
    for (const secret of [t.adminKey, customer.key, unknown]) {
      assert.ok(!logs.text.includes(secret), 'a key reached the log');
    }
  });

  it('when the logger is given a secret-bearing object, then the key fields are redacted', async () => {
    t.app.logger.info({ apiKey: t.adminKey, headers: { 'x-api-key': t.adminKey }, account: { key: t.adminKey } }, 'redaction probe');
    const probe = logs.records().find((r) => r.msg === 'redaction probe')!;
    assert.equal(probe.apiKey, '[redacted]');
    assert.equal(probe.headers['x-api-key'], '[redacted]');
    assert.equal(probe.account.key, '[redacted]');
    assert.ok(!logs.text.includes(t.adminKey));
  });

  it("when an unexpected database error is logged, then its statement's values are left out of its message and stack", () => {
    const lines: string[] = [];
    const logger = pino(loggerOptions({ logLevel: 'info' }), { write: (line: string) => void lines.push(line) });
    const error = Object.assign(
      new Error("insert into webhook_endpoints (url, secret) values ('https://example.com/é', 'whsec_c2VjcmV0') - value too long"),
      { detail: "Key (name)=('it''s a secret') already exists." },
    );
    logger.error({ err: error }, 'unexpected error');
    const record = JSON.parse(lines[0]!);
    assert.equal(record.err.message, "insert into webhook_endpoints (url, secret) values ('…', '…') - value too long");
    assert.ok(!lines[0]!.includes('whsec_') && !lines[0]!.includes("secret'"), lines[0]);
    assert.match(record.err.stack, /values \('…', '…'\)/);
  });

  it('when the request line is written, then it is the line pino writes for the same fields, its time the moment in ISO 8601 to the millisecond', () => {
    const written: string[] = [];
    const root = pino(loggerOptions({ logLevel: 'info' }), { write: (line: string) => void written.push(line) });
    // Quotes, a backslash, a control character, non-ASCII, an absent field, a number that JSON has no word for.
    const fields = {
      requestId: 'a"b\\c\u0001é😀',
      method: 'GET',
      route: undefined,
      status: 200,
      durationMs: 1.25,
      accountId: 3,
      odd: Number.NaN,
    };
    const before = Date.now();
    root.child({}, { redact: { paths: [] } }).info(fields, 'request');
    flatLineLogger(root).info(fields, 'request');
    flatLineLogger(root).info({}, 'request');
    const after = Date.now();
    const [byPino, byFlat, empty] = written.map((line) => ({ line, time: /"time":"([^"]*)"/.exec(line)![1]!, record: JSON.parse(line) }));
    assert.equal(byFlat!.line.replace(byFlat!.time, ''), byPino!.line.replace(byPino!.time, ''));
    assert.deepEqual(Object.keys(byFlat!.record), [
      'level',
      'time',
      'service',
      'requestId',
      'method',
      'status',
      'durationMs',
      'accountId',
      'odd',
      'msg',
    ]);
    assert.equal(empty!.line, `{"level":30,"time":"${empty!.time}","service":"petstore","msg":"request"}\n`);
    for (const { time } of [byPino!, byFlat!, empty!]) {
      assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(new Date(time).toISOString(), time);
      assert.ok(Date.parse(time) >= before && Date.parse(time) <= after, `${time} is not between ${before} and ${after}`);
    }
  });

  it('when lines are written a few milliseconds into a second and across a second, then the time keeps its three digits of milliseconds', () => {
    const written: string[] = [];
    const logger = flatLineLogger(pino(loggerOptions({ logLevel: 'info' }), { write: (line: string) => void written.push(line) }));
    const moments = [
      '2026-11-27T20:10:43.007Z',
      '2026-11-27T20:10:43.042Z',
      '2026-11-27T20:10:43.999Z',
      '2026-11-27T20:10:44.000Z',
      '2026-11-27T20:10:44.120Z',
    ];
    mock.timers.enable({ apis: ['Date'], now: Date.parse(moments[0]!) });
    try {
      for (const moment of moments) {
        mock.timers.setTime(Date.parse(moment));
        logger.info({ status: 200 }, 'request');
      }
    } finally {
      mock.timers.reset();
    }
    assert.deepEqual(
      written.map((line) => JSON.parse(line).time),
      moments,
    );
  });
});

/**
 * The service's own stdout, as an operator reads it: request lines go out in batches (one write per batch instead of
 * one per line), each at most LOG_FLUSH_MS after it was logged, and none is lost at a graceful exit.
 */
describe('ops: request log lines on stdout, in batches', () => {
  const services: Service[] = [];
  after(() => {
    for (const s of services) {
      s.child.kill('SIGKILL');
      s.cleanup();
    }
  });
  const linesOf = (s: Service, requestId: string) =>
    s
      .stdout()
      .split('\n')
      .filter((l) => l.includes(`"requestId":"${requestId}"`));

  it('when one request is answered and nothing follows, then its line is held back, and written within LOG_FLUSH_MS', async () => {
    const s = await startService({ LOG_FLUSH_MS: '1500' });
    services.push(s);
    // The start line's timer has run out (its tick and its second look): the request's line arms a fresh one.
    await new Promise((r) => setTimeout(r, 3300));
    const res = await fetch(`${s.url}/v1/categories`, { headers: { 'x-api-key': s.key, 'x-request-id': 'batched-alone' } });
    assert.equal(res.status, 200);
    const answered = Date.now();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(linesOf(s, 'batched-alone').length, 0, 'the line was written at once, not batched');
    while (linesOf(s, 'batched-alone').length === 0 && Date.now() - answered < 6000) await new Promise((r) => setTimeout(r, 20));
    assert.equal(linesOf(s, 'batched-alone').length, 1, 'the line never reached stdout');
    assert.ok(Date.now() - answered >= 1000, 'the line came before its flush delay');
  });

  it('when the service is stopped (SIGTERM) right after answering, then its start line came at once and every request line is in its output', async () => {
    // A delay longer than the test: only the exit can write the request lines. Other lines go out at once: the
    // start line is one (batched, it would reach stdout 10 s after it was logged).
    const s = await startService({ LOG_FLUSH_MS: '10000' });
    services.push(s);
    const started = await s.logLine('petstore listening');
    assert.ok(
      Date.now() - Date.parse(started.time) < 5000,
      `the start line reached stdout ${Date.now() - Date.parse(started.time)} ms after it was logged`,
    );
    for (let i = 0; i < 40; i++) {
      const res = await fetch(`${s.url}/v1/categories`, { headers: { 'x-api-key': s.key, 'x-request-id': `batched-exit-${i}` } });
      assert.equal(res.status, 200);
    }
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0, s.output());
    for (let i = 0; i < 40; i++) assert.equal(linesOf(s, `batched-exit-${i}`).length, 1, `no line for request ${i}`);
  });

  it('when a request line is a warning (an answer of 5xx), then it is written at once, with the lines waiting before it', () => {
    // Request lines at info wait for their batch; a 5xx's line is a warning, which an operator waits for. The process is
    // then killed (no exit hook runs): only what was handed over at once is on stdout.
    const logger = new URL('../../src/observability/logger.js', import.meta.url).href;
    const script = [
      `const { createLogger, REQUEST_LINE } = await import(${JSON.stringify(logger)});`,
      `const log = createLogger({ logLevel: 'info', env: 'production', logFlushMs: 10000 });`,
      `log.info({ n: 0, status: 200 }, REQUEST_LINE);`,
      `log.warn({ n: 1, status: 503 }, REQUEST_LINE);`,
      `log.info({ n: 2, status: 200 }, REQUEST_LINE);`,
      `setTimeout(() => process.kill(process.pid, 'SIGKILL'), 1000);`,
    ].join('\n');
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    const lines = run.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { n: number });
    assert.equal(run.signal, 'SIGKILL', run.stderr);
    assert.deepEqual(
      lines.map((l) => l.n),
      [0, 1],
      `the warning and the line before it, not the one after: ${run.stdout}${run.stderr}`,
    );
  });

  it('when request lines of every size and script fill several batches, then each reaches stdout whole, once, in order', () => {
    // Lines are encoded into a batch's bytes as they come: one that would not fit must start a new batch, and one
    // larger than a batch must go by itself, between the batches around it, nothing cut at a multi-byte character.
    const logger = new URL('../../src/observability/logger.js', import.meta.url).href;
    const pathOf = (n: number) =>
      n % 7 === 3 ? 'x'.repeat(12_000) : n % 11 === 5 ? '€'.repeat(10_000) : `/v1/pets/${'é🐈'.repeat(n * 13)}`;
    const script = [
      `const { createLogger, REQUEST_LINE } = await import(${JSON.stringify(logger)});`,
      `const log = createLogger({ logLevel: 'info', env: 'production', logFlushMs: 10000 });`,
      `const pathOf = ${pathOf.toString()};`,
      `for (let n = 0; n < 120; n++) { log.info({ n, path: pathOf(n) }, REQUEST_LINE); if (n === 60) log.warn('midway'); }`,
      // The batches handed over go out meanwhile; the last one, still waiting, is written by the exit.
      `setTimeout(() => process.exit(0), 1000);`,
    ].join('\n');
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
      maxBuffer: 1 << 24,
    });
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; n?: number; path?: string });
    assert.deepEqual(
      lines.map((l) => (l.msg === 'request' ? l.n : l.msg)),
      [...Array.from({ length: 61 }, (_, n) => n), 'midway', ...Array.from({ length: 59 }, (_, n) => n + 61)],
    );
    for (const line of lines) if (line.msg === 'request') assert.equal(line.path, pathOf(line.n!), `line ${line.n} changed`);
  });

  it('when the process ends (process.exit, or an uncaught error) with request lines still waiting in their batch, then they are written', () => {
    // The app's own logger in a process of its own: nothing but request lines is logged, so only the exit writes them.
    const logger = new URL('../../src/observability/logger.js', import.meta.url).href;
    for (const [end, status] of [
      ['process.exit(0)', 0],
      ['setImmediate(() => { throw new Error("crash") })', 1],
    ] as const) {
      const script = [
        `const { createLogger, REQUEST_LINE } = await import(${JSON.stringify(logger)});`,
        `const log = createLogger({ logLevel: 'info', env: 'production', logFlushMs: 10000 });`,
        `for (let n = 0; n < 3; n++) log.info({ n }, REQUEST_LINE);`,
        end,
      ].join('\n');
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
      const lines = run.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string; n: number });
      assert.equal(run.status, status, `${end} did not end the process as it should: ${run.stderr}`);
      if (status === 1) assert.match(run.stderr, /crash/);
      assert.deepEqual(
        lines.filter((l) => l.msg === 'request').map((l) => l.n),
        [0, 1, 2],
        `${end}: ${run.stdout}${run.stderr}`,
      );
    }
  });
});
