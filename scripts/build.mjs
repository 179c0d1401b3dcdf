// Compiles the project with tsc into dist/, saying so while it works.
//   node scripts/build.mjs              always compile (npm run build, npm test)
//   node scripts/build.mjs --if-changed skip the compile when no input changed since the last build
//                                       (`prepare`, which npm install runs; scripts/start.mjs does the same)
// "Changed" is a fingerprint of every input file's path, size and modification time, plus
// tsconfig.json and the TypeScript version, kept in dist/.build-stamp after a successful build:
// an edit, a new or deleted file, a checkout or a deleted dist/ all lead to a compile.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';

const root = process.cwd();
const stampFile = join(root, 'dist', '.build-stamp');

function fingerprint(tsVersion) {
  const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
  const hash = createHash('sha256').update(`typescript ${tsVersion}\n`);
  const entries = [];
  const walk = (dir) => {
    if (!existsSync(join(root, dir))) return;
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|mts|json)$/.test(entry.name)) {
        const { size, mtimeMs } = statSync(join(root, path));
        entries.push(`${path} ${size} ${mtimeMs}`);
      }
    }
  };
  for (const dir of tsconfig.include ?? ['.']) walk(dir);
  for (const file of ['tsconfig.json', 'package.json']) {
    const { size, mtimeMs } = statSync(join(root, file));
    entries.push(`${file} ${size} ${mtimeMs}`);
  }
  return hash.update(entries.sort().join('\n')).digest('hex');
}

/** Compiles (or, with ifChanged, skips an unneeded compile); false when tsc failed. */
export function build({ ifChanged = false } = {}) {
  let tsc;
  try {
    tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    // An install without dev dependencies (npm install --omit=dev) has no compiler: a prebuilt dist/ is used as is.
    console.log('petstore: TypeScript is not installed (dev dependencies omitted); not compiling.');
    return true;
  }
  const tsVersion = JSON.parse(readFileSync(join(tsc, '..', '..', 'package.json'), 'utf8')).version;
  const before = fingerprint(tsVersion);
  if (ifChanged && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === before) {
    precompileOpenApi();
    console.log('petstore: dist/ is up to date (no source changed since the last build); not compiling.');
    return true;
  }

  console.log(`petstore: compiling TypeScript into dist/ (tsc ${tsVersion}; about 6 s on an idle 2-core machine, longer on a busy one)…`);
  const started = performance.now();
  const result = spawnSync(process.execPath, [tsc, '-p', '.'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.log('petstore: the TypeScript compile failed (see above).');
    return false;
  }
  precompileOpenApi();
  writeFileSync(stampFile, before);
  console.log(`petstore: compiled in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
  return true;
}

/**
 * dist/openapi.json: schema/openapi.yaml as JSON with the SHA-256 of the YAML text. The service uses it
 * only when the hash matches the YAML it serves (src/rest/openapi.ts), so a stale copy is never used;
 * the YAML parser then stays out of the service's memory. Rewritten whenever the YAML changed.
 */
function precompileOpenApi() {
  const source = join(root, 'schema', 'openapi.yaml');
  if (!existsSync(source)) return;
  const out = join(root, 'dist', 'openapi.json');
  const text = readFileSync(source, 'utf8');
  const sha256 = createHash('sha256').update(text).digest('hex');
  try {
    if (JSON.parse(readFileSync(out, 'utf8')).sha256 === sha256) return;
  } catch {
    // missing or unreadable: write it
  }
  const { parse } = createRequire(import.meta.url)('yaml');
  writeFileSync(out, JSON.stringify({ sha256, document: parse(text) }));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = build({ ifChanged: process.argv.includes('--if-changed') }) ? 0 : 1;
}
