// `npm start`: compile only when a source changed since the last build (saying what it does), then
// run the service in this same process, so a terminal's Ctrl-C (the whole process group) reaches it directly. npm
// runs it through `sh -c`, which on Debian (dash) does not pass a SIGTERM sent to npm on: signal this process.
// package.json runs it as `node --max-semi-space-size=8 scripts/start.mjs`: V8 sizes its young generation
// only from a flag given at launch (one set from inside the process is ignored), as the production
// command `node --max-semi-space-size=8 dist/src/main.js` does (docs/OPERATIONS.md, "Memory and garbage collection").
import { build } from './build.mjs';

if (!build({ ifChanged: true })) process.exit(1);
await import('../dist/src/main.js');
