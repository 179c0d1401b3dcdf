import pg from 'pg';

/** Creates or drops a PostgreSQL database next to the one `url` names (tests, the bench and the migration tool). */
export async function createDatabase(url: string, name: string): Promise<string> {
  await admin(url, `create database "${name.replace(/"/g, '""')}"`);
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(name)}`;
  return u.toString();
}

export async function dropDatabase(url: string, name: string): Promise<void> {
  await admin(url, `drop database if exists "${name.replace(/"/g, '""')}" with (force)`);
}

/** The database `DATABASE_URL` names does not exist, and its creation was not asked for. */
export class MissingDatabaseError extends Error {
  constructor(
    readonly database: string,
    url: URL,
  ) {
    const server = url.port ? `${url.hostname}:${url.port}` : url.hostname;
    const createdb = [
      'createdb',
      '-h',
      url.hostname,
      url.port && `-p ${url.port}`,
      url.username && `-U ${decodeURIComponent(url.username)}`,
      database,
    ];
    super(
      `the PostgreSQL database "${database}" does not exist on ${server}. Check DATABASE_URL for a typo; ` +
        `if it is a new database, create it (${createdb.filter(Boolean).join(' ')}), ` +
        `or let the service create it: DATABASE_CREATE=true, or npm run migrate -- --create.`,
    );
    this.name = 'MissingDatabaseError';
  }
}

/**
 * Makes sure the database `url` names exists before the ORM opens it: a missing one is refused
 * (`MissingDatabaseError`) unless `create` is true, so a mistyped name never becomes a new, empty store.
 * Any other failure to connect (server down, wrong password) is thrown as `pg` reports it.
 */
export async function ensureDatabase(url: string, create: boolean): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return;
  } catch (error) {
    if ((error as { code?: string }).code !== '3D000') throw error;
  } finally {
    await client.end().catch(() => {});
  }
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.slice(1));
  if (!create) throw new MissingDatabaseError(name, u);
  // Created from the server's maintenance database, which every installation has.
  u.pathname = '/postgres';
  await createDatabase(u.toString(), name).catch((error: { code?: string }) => {
    if (error.code !== '42P04') throw error; // created meanwhile by another instance
  });
}

async function admin(url: string, sql: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
