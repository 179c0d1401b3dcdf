#!/usr/bin/env node
// Breaking-change report: `npm run schema:diff [REF]` compares schema/openapi.yaml and schema/schema.graphql
// in the working tree with their versions at the git ref REF (default HEAD~1, the previous commit).
//   OpenAPI: api-smart-diff (classifies every change as breaking, non-breaking, deprecated, annotation).
//   GraphQL: @graphql-inspector/cli `diff`.
// Exit status: 0 no breaking change, 1 breaking changes listed, 2 the comparison could not run.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { apiDiff } from 'api-smart-diff';

const OPENAPI = 'schema/openapi.yaml';
const GRAPHQL = 'schema/schema.graphql';
const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

const args = process.argv.slice(2);
if (args.includes('-h') || args.includes('--help')) {
  console.log(
    'Usage: npm run schema:diff [REF]\nCompares schema/openapi.yaml and schema/schema.graphql with git REF (default HEAD~1) and lists breaking changes.',
  );
  process.exit(0);
}
const ref = args.find((a) => !a.startsWith('-')) ?? 'HEAD~1';
const require = createRequire(import.meta.url);

function git(...gitArgs) {
  return execFileSync('git', gitArgs, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
}

let root;
try {
  root = git('rev-parse', '--show-toplevel').trim();
  git('rev-parse', '--verify', '--quiet', `${ref}^{commit}`);
} catch {
  console.error(`schema:diff: "${ref}" is not a commit in this repository (try a branch, a tag or HEAD~N).`);
  process.exit(2);
}

/** The file at `ref`, or undefined when it did not exist there. */
function atRef(path) {
  try {
    return git('show', `${ref}:${path}`);
  } catch {
    return undefined;
  }
}

function current(path) {
  const file = join(root, path);
  return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
}

/** `["paths", "/pets/{petId}", "get", ...]` → `GET /pets/{petId}`. */
function operationOf(path) {
  if (path[0] !== 'paths') return path.slice(0, 3).join('.');
  const method = typeof path[2] === 'string' && METHODS.has(path[2]) ? path[2].toUpperCase() : undefined;
  return method ? `${method} ${path[1]}` : `${path[1]}`;
}

function compareOpenApi() {
  console.log(`\n## OpenAPI: ${OPENAPI} (${ref} → working tree)\n`);
  const before = atRef(OPENAPI);
  const after = current(OPENAPI);
  if (!before || !after) {
    console.log(before ? 'The document was removed: every operation is gone (breaking).' : `Not present at ${ref}: nothing to compare.`);
    return before ? 1 : 0;
  }
  const diffs = apiDiff(parseYaml(before), parseYaml(after));
  const counts = {};
  for (const d of diffs) counts[d.type] = (counts[d.type] ?? 0) + 1;
  // Components change clients only where operations use them, and the diff reports them there too.
  const breaking = diffs.filter((d) => d.type === 'breaking' && d.path[0] !== 'components');
  const byOperation = new Map();
  for (const d of breaking) {
    const op = operationOf(d.path);
    const line = d.description || `${d.action} at ${d.path.join('.')}`;
    if (!byOperation.has(op)) byOperation.set(op, new Set());
    byOperation.get(op).add(line);
  }
  if (diffs.length === 0) console.log('No changes.');
  else if (byOperation.size === 0) console.log('No breaking changes.');
  else {
    console.log(`Breaking changes in ${byOperation.size} operation(s):`);
    for (const [op, lines] of byOperation) {
      console.log(`  ✖ ${op}`);
      for (const line of lines) console.log(`      ${line}`);
    }
  }
  if (diffs.length)
    console.log(
      `\nAll changes by kind: ${Object.entries(counts)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
    );
  return byOperation.size ? 1 : 0;
}

function compareGraphql() {
  console.log(`\n## GraphQL: ${GRAPHQL} (${ref} → working tree)\n`);
  const before = atRef(GRAPHQL);
  const after = current(GRAPHQL);
  if (!before || !after) {
    console.log(before ? 'The schema was removed (breaking).' : `Not present at ${ref}: nothing to compare.`);
    return before ? 1 : 0;
  }
  const dir = mkdtempSync(join(tmpdir(), 'schema-diff-'));
  try {
    writeFileSync(join(dir, 'before.graphql'), before);
    writeFileSync(join(dir, 'after.graphql'), after);
    const manifest = require.resolve('@graphql-inspector/cli/package.json');
    const bin = join(dirname(manifest), require(manifest).bin['graphql-inspector']);
    const run = spawnSync(process.execPath, [bin, 'diff', join(dir, 'before.graphql'), join(dir, 'after.graphql')], {
      encoding: 'utf8',
      env: { ...process.env, NODE_ENV: 'production' },
    });
    const output = `${run.stdout}${run.stderr}`.replace(/^\[(log|error|success|info|warn)\] ?/gm, '').trim();
    console.log(output || '(no output)');
    if (run.status !== 0 && !/breaking change/i.test(output)) throw new Error(`graphql-inspector exited ${run.status}`);
    return run.status === 0 ? 0 : 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  console.log(`# Breaking-change report against ${ref} (${git('rev-parse', '--short', ref).trim()})`);
  const broken = compareOpenApi() + compareGraphql();
  console.log(
    broken
      ? '\nBreaking changes found: they belong in /v2 (docs/DEVELOPMENT.md), or keep the old shape and deprecate it with a sunset date.'
      : '\nNo breaking changes.',
  );
  process.exit(broken ? 1 : 0);
} catch (error) {
  console.error(`schema:diff failed: ${error instanceof Error ? error.message : error}`);
  process.exit(2);
}
