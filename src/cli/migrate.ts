/** `npm run migrate`: applies pending migrations to DATABASE_URL and exits. */
import { loadConfig } from '../config.js';
import { createOrm, migrate } from '../db/orm.js';

const orm = await createOrm(loadConfig());
try {
  await migrate(orm);
  console.log('Migrations are up to date.');
} finally {
  await orm.close(true);
}
