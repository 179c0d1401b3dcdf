import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, print, visit } from 'graphql';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { projectPath } from '../../src/project-path.js';
import { QUIET_CLI_ENV } from './support.js';

type Json = any;

/** `npm run schema:diff [REF]` is `node scripts/schema-diff.mjs [REF]`, run here in a scratch repository. */
function schemaDiff(repo: string, ...args: string[]) {
  const run = spawnSync(process.execPath, [projectPath('scripts/schema-diff.mjs'), ...args], {
    cwd: repo,
    encoding: 'utf8',
    env: QUIET_CLI_ENV,
  });
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('contract: npm run schema:diff reports breaking changes against a git ref', () => {
  let repo: string;
  const git = (...args: string[]) =>
    execFileSync(
      'git',
      ['-c', 'user.name=schema-diff test', '-c', 'user.email=test@example.invalid', '-c', 'commit.gpgsign=false', ...args],
      {
        cwd: repo,
        encoding: 'utf8',
      },
    );
  const openapi = () => parseYaml(readFileSync(join(repo, 'schema/openapi.yaml'), 'utf8')) as Json;
  const writeOpenapi = (doc: Json) => writeFileSync(join(repo, 'schema/openapi.yaml'), stringifyYaml(doc));
  const editGraphql = (edit: (sdl: string) => string) => {
    const file = join(repo, 'schema/schema.graphql');
    writeFileSync(file, edit(readFileSync(file, 'utf8')));
  };

  before(() => {
    repo = mkdtempSync(join(tmpdir(), 'petstore-schema-diff-'));
    mkdirSync(join(repo, 'schema'));
    copyFileSync(projectPath('schema/openapi.yaml'), join(repo, 'schema/openapi.yaml'));
    copyFileSync(projectPath('schema/schema.graphql'), join(repo, 'schema/schema.graphql'));
    git('init', '-q');
    git('add', 'schema');
    git('commit', '-q', '-m', 'the documents as they are');
  });
  after(() => rmSync(repo, { recursive: true, force: true }));

  it('when nothing changed since the ref, then it reports no breaking change and exits 0', () => {
    const { code, output } = schemaDiff(repo, 'HEAD');
    assert.equal(code, 0, output);
    assert.match(output, /No breaking changes\.\s*$/);
  });

  it('when only additions were made (a new optional query parameter, a new GraphQL field), then it exits 0', () => {
    const doc = openapi();
    doc.paths['/pets'].get.parameters.push({
      name: 'sort',
      in: 'query',
      description: 'Sort order.',
      schema: { type: 'string', enum: ['id', 'name'] },
    });
    writeOpenapi(doc);
    editGraphql((sdl) => sdl.replace(/type Order implements Node \{/, 'type Order implements Node {\n  """A note."""\n  note: String'));
    const { code, output } = schemaDiff(repo, 'HEAD');
    assert.equal(code, 0, output);
    assert.match(output, /non-breaking/);
    assert.match(output, /Field note was added to object type Order/);
    // Back to the committed documents for the next test.
    copyFileSync(projectPath('schema/openapi.yaml'), join(repo, 'schema/openapi.yaml'));
    copyFileSync(projectPath('schema/schema.graphql'), join(repo, 'schema/schema.graphql'));
  });

  it('when the last commit removed an operation, required a new parameter and dropped a GraphQL field, then the default ref (HEAD~1) lists each and exits 1', () => {
    const doc = openapi();
    delete doc.paths['/store/inventory'];
    doc.paths['/store/orders'].get.parameters.push({
      name: 'region',
      in: 'query',
      required: true,
      description: 'Region.',
      schema: { type: 'string' },
    });
    writeOpenapi(doc);
    editGraphql((sdl) =>
      print(
        visit(parse(sdl), {
          ObjectTypeDefinition: (node) =>
            node.name.value === 'Pet' ? { ...node, fields: node.fields?.filter((f) => f.name.value !== 'name') } : undefined,
        }),
      ),
    );
    git('commit', '-q', '-am', 'a breaking commit');

    const { code, output } = schemaDiff(repo);
    assert.equal(code, 1, output);
    assert.match(output, /against HEAD~1/);
    assert.match(output, /✖ GET \/store\/inventory/);
    assert.match(output, /✖ GET \/store\/orders\n\s+.*required query parameter `region`/);
    assert.match(output, /Field name was removed from object type Pet/);
    assert.match(output, /Breaking changes found/);
  });

  it('when the ref does not exist, then it says so and exits 2', () => {
    const { code, output } = schemaDiff(repo, 'no-such-ref');
    assert.equal(code, 2, output);
    assert.match(output, /"no-such-ref" is not a commit/);
  });
});
