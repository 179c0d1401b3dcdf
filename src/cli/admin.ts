/**
 * `npm run admin -- <command>`: staff work on the configured database (DATABASE_URL) without the API,
 * e.g. after the last staff key was lost. Acts as staff: whoever can run it on the server can read the
 * database anyway. Safe while the service runs (every change is one small transaction).
 */
import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { createOrm, migrate } from '../db/orm.js';
import { unusableDatabase } from '../db/unusable.js';
import { AccountsService, DomainError, OPERATOR, type AccountView } from '../domain/index.js';

const USAGE = `Usage: npm run admin -- <command>
  issue-staff-key [ACCOUNT_ID]  a new API key for a staff account (default: the oldest; one is created if
                                none exists), printed once
  accounts                      every account with its keys (id, prefix, revoked or active)
  revoke-key KEY_ID             revoke a key: it stops working within a second, on every instance
The database is DATABASE_URL's (default sqlite:./data/petstore.db), as for npm start.`;

const [command, argument] = process.argv.slice(2);
const numeric = (value: string | undefined, name: string) => {
  if (value === undefined || !/^[1-9]\d{0,9}$/.test(value)) usage(`${name} must be a positive whole number.`);
  return Number(value);
};
function usage(problem?: string): never {
  if (problem) process.stderr.write(`${problem}\n\n`);
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}

if (command === 'help' || command === '--help') {
  console.log(USAGE);
  process.exit(0);
}
if (!command) usage('Which command?');
if (!['issue-staff-key', 'accounts', 'revoke-key'].includes(command)) usage(`Unknown command: ${command}.`);

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}
// A mistyped path would otherwise create and migrate a new, empty database, and a key issued there
// would be unknown to the service.
if (config.database.kind === 'sqlite' && !existsSync(config.database.path)) {
  process.stderr.write(`No database at ${config.database.path}: start the service once to create it, or check DATABASE_URL.\n`);
  process.exit(1);
}
const orm = await createOrm(config).catch((error: unknown) => {
  const problem = unusableDatabase(error, config.database);
  if (!problem) throw error;
  process.stderr.write(`Admin: ${problem}\n`);
  process.exit(1);
});
try {
  if (config.migrateOnStart) await migrate(orm);
  const accounts = new AccountsService(orm.em.fork());
  if (command === 'issue-staff-key') {
    const issued = await accounts.issueStaffKey(OPERATOR, argument === undefined ? undefined : numeric(argument, 'ACCOUNT_ID'));
    console.log(`New API key ${issued.id} for staff account ${issued.account.id} (${issued.account.name}). Shown once, keep it safe:`);
    console.log(`  X-API-Key: ${issued.key}`);
  } else if (command === 'revoke-key') {
    const key = await accounts.revokeApiKey(OPERATOR, numeric(argument, 'KEY_ID'));
    console.log(`Key ${key.id} (${key.prefix}…) of account ${key.accountId} is revoked since ${key.revokedAt!.toISOString()}.`);
  } else {
    for (const account of await allAccounts()) {
      console.log(`account ${account.id}  ${account.role}  ${account.plan}  ${account.name}`);
      for (const key of await accounts.listApiKeys(OPERATOR, account.id)) {
        console.log(`  key ${key.id}  ${key.prefix}…  ${key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active'}`);
      }
    }
  }

  async function allAccounts(): Promise<AccountView[]> {
    const all: AccountView[] = [];
    for (let cursor: string | null = null; ; ) {
      const page = await accounts.listAccounts(OPERATOR, { limit: 100, cursor });
      all.push(...page.items);
      if (!(cursor = page.nextCursor)) return all;
    }
  }
} catch (error) {
  if (!(error instanceof DomainError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 1;
} finally {
  await orm.close(true);
}
