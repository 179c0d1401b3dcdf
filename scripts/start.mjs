// `npm start`: compile only when a source changed since the last build (saying what it does), then
// run the service in this same process, so signals from npm or a terminal reach it directly.
// package.json runs it as `node --max-semi-space-size=8 scripts/start.mjs`: V8 sizes its young generation
// only from a flag given at launch (one set from inside the process is ignored), as the production
// command `node --max-semi-space-size=8 dist/src/main.js` does (docs/OPERATIONS.md, "Memory and garbage collection").
import { build } from './build.mjs';

if (!build({ ifChanged: true })) process.exit(1);
await import('../dist/src/main.js');
