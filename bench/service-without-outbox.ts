/**
 * The service with the outbox's writes turned off: placing an order (and every other store change)
 * writes no events (no `events` rows), everything else as
 * in `dist/src/main.js`. `order with outbox / without` then measures exactly what the outbox costs an
 * order, in one run. Benchmark only: no configuration of `dist/src/main.js` reaches it.
 */
import 'reflect-metadata';
import { loadConfig } from '../src/config.js';
import { createApp } from '../src/app.js';

const config = loadConfig();
const app = await createApp(config, { outbox: false });
const { url } = await app.listen();
process.stdout.write(`Petstore API on ${url}/v1 (outbox writes off: benchmark only)\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
