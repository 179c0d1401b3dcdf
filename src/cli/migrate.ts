/**
 * `npm run migrate [-- --create]`: applies pending migrations to DATABASE_URL, says which it applied,
 * and exits. `--create` creates a PostgreSQL database that does not exist yet (as DATABASE_CREATE=true).
 */
import { ConfigError, loadConfig, type Config } from '../config.js';
import { createOrm, migrate } from '../db/orm.js';
import { unusableDatabase } from '../db/unusable.js';
import { categoryNameCollisions } from '../domain/categories.service.js';

const args = process.argv.slice(2);
const unknown = args.filter((arg) => arg !== '--create');
if (unknown.length) {
  process.stderr.write(`Unknown argument ${unknown[0]}. Usage: npm run migrate [-- --create]\n`);
  process.exit(2);
}

let config: Config | undefined;
try {
  config = loadConfig();
  const orm = await createOrm({ ...config, databaseCreate: config.databaseCreate || args.includes('--create') });
  try {
    const applied = await migrate(orm);
    process.stdout.write(
      applied.length === 0
        ? 'Migrations are up to date: nothing to apply.\n'
        : `Applied ${applied.length} migration${applied.length === 1 ? '' : 's'}:\n${applied.map((name) => `  ${name}\n`).join('')}`,
    );
    for (const c of await categoryNameCollisions(orm.em.fork())) {
      process.stdout.write(
        `Category ${c.id} "${c.name}" equals category ${c.sameAsId ?? '?'}'s name ignoring case: kept; rename or merge it.\n`,
      );
    }
  } finally {
    await orm.close(true);
  }
} catch (error) {
  const problem = config && unusableDatabase(error, config.database);
  if (!problem && !(error instanceof ConfigError)) throw error;
  process.stderr.write(`Migration failed: ${problem ?? (error as Error).message}\n`);
  process.exit(1);
}
