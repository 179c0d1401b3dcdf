/** First start on an empty database: the staff key, printed once, and outside production the demo data. */
import type { Config } from './config.js';
import type { Orm } from './db/orm.js';
import { AccountsService } from './domain/index.js';
import { seedDemoCatalog } from './domain/seed.js';

/** Prints a line of the first start; `key` is the generated key the line shows, for main.ts's export line. */
export type Announce = (line: string, key?: { role: 'staff' | 'customer'; key: string }) => void;

export async function bootstrap(orm: Orm, config: Config, announce: Announce) {
  const em = orm.em.fork();
  const accounts = new AccountsService(em);
  const adminKey = await accounts.bootstrapAdmin(config.adminApiKey);
  if (!adminKey) return;
  if (config.adminApiKey) announce('Created the staff account with the key from ADMIN_API_KEY.');
  else
    announce(`Created the staff account. Its API key (shown once, keep it safe):\n  X-API-Key: ${adminKey}`, {
      role: 'staff',
      key: adminKey,
    });
  if (config.seedDemo) {
    await seedDemoCatalog(em);
    const demoKey = await accounts.createDemoCustomer();
    announce(`Seeded demo categories and pets, and a demo customer (plan free). Its API key:\n  X-API-Key: ${demoKey}`, {
      role: 'customer',
      key: demoKey,
    });
  }
}
