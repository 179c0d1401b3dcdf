import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { projectPath } from '../../src/project-path.js';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { postgresUrl } from '../helpers/services.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `npm run admin -- …` (or the compiled script directly) as a process of its own on the service's database. */
function admin(t: TestApp, args: string[], { viaNpm = false, databaseUrl = t.config.database.url } = {}): Promise<Run> {
  return viaNpm
    ? run('npm', ['run', '--silent', 'admin', '--', ...args], databaseUrl)
    : run(process.execPath, [projectPath('dist/src/cli/admin.js'), ...args], databaseUrl);
}

/** `file argv…` on `databaseUrl`, in the project's directory. */
function run(file: string, argv: string[], databaseUrl: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      argv,
      { cwd: projectPath('.'), env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A loopback port nothing listens on (taken, then given back). */
function deadPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('npm run admin: staff work on the configured database without the API (issue 13, item 6)', () => {
  let t: TestApp;
  let staff: Client; // the key issued by the first test
  before(async () => {
    t = await startApp({});
  });
  after(() => t.close());

  it('when the staff key is lost, then issue-staff-key prints a new working staff key once, and no data is lost', async () => {
    const kept = await t.admin.post('/v1/categories', { name: 'Kept' });
    assert.equal(kept.status, 201, kept.text);

    const run = await admin(t, ['issue-staff-key'], { viaNpm: true });
    assert.equal(run.code, 0, run.stderr + run.stdout);
    assert.match(run.stdout, /Shown once, keep it safe/);
    const key = /X-API-Key: (psk_[\w-]+)/.exec(run.stdout)?.[1];
    assert.ok(key, run.stdout);
    assert.notEqual(key, t.adminKey);

    staff = new Client(t.url, key);
    const me = await staff.get('/v1/account');
    assert.equal(me.status, 200);
    assert.equal(me.body.role, 'staff');
    assert.deepEqual((await staff.get('/v1/categories?limit=100')).body.map((c: { name: string }) => c.name).includes('Kept'), true);
    assert.equal((await t.admin.get('/v1/account')).status, 200, 'the old key still works until revoked');
  });

  it('when accounts and revoke-key run, then every account and key is listed, and the revoked key stops working', async () => {
    const listed = await admin(t, ['accounts']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^account 1 {2}staff {2}business {2}Administrator$/m, listed.stdout);
    const { id: oldKeyId, prefix } = (await t.admin.get('/v1/account')).body.apiKey as { id: number; prefix: string };
    assert.ok(t.adminKey.startsWith(prefix));
    assert.match(listed.stdout, new RegExp(`^  key ${oldKeyId} {2}${prefix}… {2}active$`, 'm'), listed.stdout);

    const revoked = await admin(t, ['revoke-key', String(oldKeyId)]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`Key ${oldKeyId} .* is revoked`));
    // Key lookups are cached for one second per instance.
    let status = 0;
    for (let i = 0; i < 40 && status !== 401; i++) {
      status = (await t.admin.get('/v1/account')).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 401);
    assert.match((await admin(t, ['accounts'])).stdout, new RegExp(`^  key ${oldKeyId} .* revoked \\d{4}-`, 'm'));
  });

  it('when a command or its argument is wrong, then it says what to run instead and changes nothing', async () => {
    const before = (await admin(t, ['accounts'])).stdout;
    const unknown = await admin(t, ['reset-everything']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /Unknown command: reset-everything[\s\S]*Usage: npm run admin -- <command>/);
    const notANumber = await admin(t, ['revoke-key', '1; drop table account']);
    assert.equal(notANumber.code, 2);
    assert.match(notANumber.stderr, /KEY_ID must be a positive whole number/);
    const missing = await admin(t, ['revoke-key', '999999']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /API key 999999 .*not found|not found/i);
    assert.doesNotMatch(missing.stderr, /at .*\.js:\d+/, 'no stack trace');
    const customer = await staff.post('/v1/accounts', { name: 'Shopper', role: 'customer', plan: 'free' });
    assert.equal(customer.status, 201, customer.text);
    const wrongRole = await admin(t, ['issue-staff-key', String(customer.body.id)]);
    assert.equal(wrongRole.code, 1);
    assert.match(wrongRole.stderr, /customer account; a staff key needs a staff account/);
    if (t.config.database.kind === 'sqlite') {
      // A mistyped SQLite path is refused, not created as a new empty database.
      const typo = `${t.config.database.path}.typo`;
      const wrongFile = await admin(t, ['issue-staff-key'], { databaseUrl: `sqlite:${typo}` });
      assert.equal(wrongFile.code, 1);
      assert.match(wrongFile.stderr, /No database at .*\.typo: start the service once to create it, or check DATABASE_URL/);
      assert.equal(existsSync(typo), false);
    }
    // A PostgreSQL that cannot be reached (a port nothing listens on): one line naming it, its password hidden.
    const dead = `postgres://postgres:s3cret@127.0.0.1:${await deadPort()}/petstore`;
    for (const [name, done] of [
      ['admin', await admin(t, ['accounts'], { databaseUrl: dead })],
      ['migrate', await run(process.execPath, [projectPath('dist/src/cli/migrate.js')], dead)],
    ] as const) {
      assert.equal(done.code, 1, `${name}: ${done.stderr}`);
      assert.match(done.stderr, /cannot use the database at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/petstore \(ECONNREFUSED/, name);
      assert.doesNotMatch(done.stderr, /s3cret|at .*\.js:\d+/, `${name}: no password, no stack trace`);
    }
    // A PostgreSQL database that does not exist: the same line as the start's, with how to create it.
    const server = await postgresUrl();
    if (server) {
      const missing = new URL(server);
      missing.pathname = `/petstore_missing_${process.pid}`;
      const refused = await admin(t, ['accounts'], { databaseUrl: missing.toString() });
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /^Admin: .*does not exist.*createdb/s);
      assert.doesNotMatch(refused.stderr, /at .*\.js:\d+/, 'no stack trace');
    }
    const after = (await admin(t, ['accounts'])).stdout;
    assert.equal(
      after,
      `${before}account ${customer.body.id}  customer  free  Shopper\n  key ${customer.body.apiKey.id}  ${customer.body.apiKey.prefix}…  active\n`,
    );
  });
});
