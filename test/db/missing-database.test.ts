import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { projectPath } from '../../src/project-path.js';
import { dropDatabase } from '../../src/db/pg-admin.js';
import { postgresUrl, skipUnless } from '../helpers/services.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A compiled entry point (`src/main.js`, `src/cli/migrate.js`) as a process of its own, with only this environment. */
function run(script: string, env: Record<string, string>, args: string[] = []): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [projectPath(`dist/${script}`), ...args],
      {
        cwd: projectPath('.'),
        env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', PORT: '0', HOST: '127.0.0.1', ...env },
        timeout: 60_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The migrations this build ships for a dialect, by name. */
const migrationNames = (dialect: 'sqlite' | 'postgresql') =>
  readdirSync(projectPath(`src/db/migrations/${dialect}`))
    .filter((f) => /^Migration\w+\.ts$/.test(f))
    .map((f) => f.slice(0, -3))
    .sort();

async function databaseExists(adminUrl: string, name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return (await client.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
  } finally {
    await client.end();
  }
}

describe('npm run migrate: says what it applied (issue 21, item 10)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-migrate-cli-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('when run on an empty database, then it names every migration it applied; run again, it says there was nothing to apply', async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'fresh.db')}` };
    const first = await run('src/cli/migrate.js', env);
    assert.equal(first.code, 0, first.stderr);
    const names = migrationNames('sqlite');
    assert.ok(names.length >= 7);
    assert.match(first.stdout, new RegExp(`^Applied ${names.length} migrations:\\n`));
    for (const name of names) assert.ok(first.stdout.includes(`  ${name}\n`), `${name} is named:\n${first.stdout}`);
    assert.doesNotMatch(first.stdout, /up to date/);

    const second = await run('src/cli/migrate.js', env);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, 'Migrations are up to date: nothing to apply.\n');
  });

  it('when given an argument it does not know, then it exits 2 with the usage', async () => {
    const r = await run('src/cli/migrate.js', { DATABASE_URL: `sqlite:${join(dir, 'unused.db')}` }, ['--craete']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /Unknown argument --craete\. Usage: npm run migrate \[-- --create\]/);
  });
});

describe('a PostgreSQL DATABASE_URL naming no database is refused, not created (issue 21, item 9)', async () => {
  const admin = await postgresUrl();
  const name = `petstore_missing_${process.pid}_${randomBytes(3).toString('hex')}`;
  const urlOf = (db: string) => {
    const u = new URL(admin!);
    u.pathname = `/${db}`;
    return u.toString();
  };
  before(async () => {
    if (admin) await dropDatabase(admin, name);
  });
  after(async () => {
    if (admin) await dropDatabase(admin, name);
  });

  it('when the service starts on it, then it exits non-zero saying how to create it, and no database is created', {
    skip: skipUnless(admin, 'PostgreSQL'),
  }, async () => {
    const r = await run('src/main.js', { DATABASE_URL: urlOf(name), NODE_ENV: 'production' });
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, new RegExp(`Petstore could not start: the PostgreSQL database "${name}" does not exist on `));
    assert.match(r.stderr, new RegExp(`createdb -h \\S+ (-p \\d+ )?(-U \\S+ )?${name}`));
    assert.match(r.stderr, /DATABASE_CREATE=true, or npm run migrate -- --create/);
    assert.doesNotMatch(r.stdout, /Petstore API on/);
    assert.equal(await databaseExists(admin!, name), false, 'no database was created');
  });

  it('when npm run migrate runs on it, then it is refused alike; with --create it creates and migrates it', {
    skip: skipUnless(admin, 'PostgreSQL'),
  }, async () => {
    const refused = await run('src/cli/migrate.js', { DATABASE_URL: urlOf(name) });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`Migration failed: the PostgreSQL database "${name}" does not exist`));
    assert.equal(await databaseExists(admin!, name), false, 'no database was created');

    const created = await run('src/cli/migrate.js', { DATABASE_URL: urlOf(name) }, ['--create']);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, new RegExp(`^Applied ${migrationNames('postgresql').length} migrations:`));
    assert.equal(await databaseExists(admin!, name), true);
  });

  it('when the service starts with DATABASE_CREATE=true on a missing database, then it creates it and serves', {
    skip: skipUnless(admin, 'PostgreSQL'),
  }, async () => {
    const other = `${name}_c`;
    try {
      const r = await startAndStop({ DATABASE_URL: urlOf(other), DATABASE_CREATE: 'true', NODE_ENV: 'production' });
      assert.match(r.stdout, /Petstore API on http:\/\/127\.0\.0\.1:\d+\/v1/, r.stderr);
      assert.equal(await databaseExists(admin!, other), true);
    } finally {
      await dropDatabase(admin!, other);
    }
  });
});

/** Starts the service, waits for its ready line, stops it with SIGTERM; its output. */
function startAndStop(env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [projectPath('dist/src/main.js')],
      {
        cwd: projectPath('.'),
        env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', PORT: '0', HOST: '127.0.0.1', ...env },
        timeout: 120_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('Petstore API on')) child.kill('SIGTERM');
    });
    child.once('error', reject);
  });
}
