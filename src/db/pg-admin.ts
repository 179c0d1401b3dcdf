import pg from 'pg';

/** Creates or drops a PostgreSQL database next to the one `url` names (tests and the migration tool). */
export async function createDatabase(url: string, name: string): Promise<string> {
  await admin(url, `create database "${name}"`);
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function dropDatabase(url: string, name: string): Promise<void> {
  await admin(url, `drop database if exists "${name}" with (force)`);
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
