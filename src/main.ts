/** Process entry: config → app → listen; SIGTERM/SIGINT shut down gracefully. */
import 'reflect-metadata';
import { ConfigError, loadConfig } from './config.js';
import { createApp } from './app.js';

let config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\nSee the configuration table in README.md.\n`);
    process.exit(1);
  }
  throw error;
}

const app = await createApp(config);
const { url } = await app.listen();
app.logger.info({ url, database: config.database.kind, limiter: config.redisUrl ? 'redis' : 'memory' }, 'petstore listening');
config.announce(`Petstore API on ${url}/v1  (GraphQL ${url}/graphql, docs ${url}/docs)`);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    app.logger.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      (error) => {
        app.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
