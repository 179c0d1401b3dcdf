// `npm start`: compile only when a source changed since the last build (saying what it does), then
// run the service in this same process, so signals from npm or a terminal reach it directly.
import { build } from './build.mjs';

if (!build({ ifChanged: true })) process.exit(1);
await import('../dist/src/main.js');
