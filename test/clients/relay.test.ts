/**
 * Relay against the live service: relay-compiler (the npm package's native binary) compiles `@refetchable` fragments
 * on Pet and Category and a `@connection`, and relay-runtime runs the compiler's queries (the query, the refetch
 * queries through `node(id:)`, the pagination query) through the environment docs/CLIENTS.md shows, without React.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import {
  createOperationDescriptor,
  fetchQuery,
  getSelector,
  type ConcreteRequest,
  type Environment,
  type ReaderFragment,
  type SingularReaderSelector,
} from 'relay-runtime';
import type { ApolloServerPlugin } from '@apollo/server';
import { projectPath } from '../../src/project-path.js';
import { createAccount, startApp, type TestApp } from '../helpers/app.js';
import { doc } from '../helpers/readme.js';
import type { GraphQLContext } from '../../src/graphql/context.js';

const run = promisify(execFile);

/** The app's operations, as a Relay app's components would declare them. */
const SOURCE = `
const graphql = String.raw;

graphql\`
  fragment PetCard_pet on Pet @refetchable(queryName: "PetCardRefetchQuery") {
    id
    name
    status
    category { id name }
  }
\`;

graphql\`
  fragment CategoryCard_category on Category @refetchable(queryName: "CategoryCardRefetchQuery") {
    id
    name
    description
  }
\`;

graphql\`
  fragment CategoryPets_category on Category
  @refetchable(queryName: "CategoryPetsPaginationQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 2 }, cursor: { type: "String" }) {
    pets(first: $count, after: $cursor) @connection(key: "CategoryPets_pets") {
      edges { node { id ...PetCard_pet } }
    }
  }
\`;

graphql\`
  query AppQuery {
    pets(first: 10) { edges { node { id ...PetCard_pet } } }
    categories(first: 10) { edges { node { id ...CategoryCard_category ...CategoryPets_category } } }
  }
\`;
`;

/** A section's first fenced block of `language` in docs/CLIENTS.md. */
function clientsBlock(section: string, language: string): string {
  const text = doc('CLIENTS.md').split(`\n## ${section}\n`)[1]?.split('\n## ')[0];
  assert.ok(text, `docs/CLIENTS.md has a ${section} section`);
  const block = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(text)?.[1];
  assert.ok(block, `its ${section} section has a \`\`\`${language} block`);
  return block;
}

const toCommonJs = (source: string) =>
  ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } })
    .outputText;

interface RelayProject {
  dir: string;
  artifact<T>(name: string): T;
}

/** CLIENTS.md's `persistConfig` for relay-compiler (in its Trusted documents section). */
function clientsPersistConfig(): { file: string; algorithm: string } {
  const text = /"persistConfig": (\{[^}]*\})/.exec(doc('CLIENTS.md'))?.[1];
  assert.ok(text, 'docs/CLIENTS.md gives relay-compiler a persistConfig');
  return JSON.parse(text);
}

/**
 * Writes the Relay project (CLIENTS.md's relay.config.json, the committed schema, SOURCE), compiles it, loads its
 * artifacts. `persist`: with CLIENTS.md's persistConfig, its file created first as CLIENTS.md says.
 */
async function compileRelayProject({ persist = false } = {}): Promise<RelayProject> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-relay-'));
  symlinkSync(projectPath('node_modules'), join(dir, 'node_modules'), 'dir');
  const config = JSON.parse(clientsBlock('Relay', 'json'));
  if (persist) {
    config.persistConfig = clientsPersistConfig();
    writeFileSync(join(dir, config.persistConfig.file), '{}');
  }
  writeFileSync(join(dir, 'relay.config.json'), JSON.stringify(config));
  writeFileSync(join(dir, 'schema.graphql'), readFileSync(projectPath('schema/schema.graphql')));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'App.ts'), SOURCE);
  await run(projectPath('node_modules/.bin/relay-compiler'), [], { cwd: dir });
  // The TypeScript artifacts, as a bundler would load them: compiled to CommonJS beside themselves.
  const generated = join(dir, 'src', '__generated__');
  writeFileSync(join(dir, 'package.json'), '{"type": "commonjs"}');
  for (const file of readdirSync(generated).filter((f) => f.endsWith('.graphql.ts'))) {
    writeFileSync(join(generated, file.replace(/\.ts$/, '.js')), toCommonJs(readFileSync(join(generated, file), 'utf8')));
  }
  const load = createRequire(join(generated, 'index.js'));
  return { dir, artifact: <T>(name: string) => (load(`./${name}.graphql.js`) as { default: T }).default };
}

/** CLIENTS.md's environment code, compiled as written. */
async function clientsEnvironment(dir: string): Promise<(uri: string, apiKey: string) => Environment> {
  const { outputText } = ts.transpileModule(clientsBlock('Relay', 'ts'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  writeFileSync(join(dir, 'environment.mjs'), outputText);
  const module = (await import(pathToFileURL(join(dir, 'environment.mjs')).href)) as {
    petstoreEnvironment: (uri: string, apiKey: string) => Environment;
  };
  return module.petstoreEnvironment;
}

/** The query text of every operation the service served. */
function recordingPlugin(seen: string[]): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart({ request }) {
      if (request.query) seen.push(request.query);
    },
  };
}

type FragmentRef = { ' $fragmentSpreads'?: unknown } & object;

describe('Relay: relay-compiler and relay-runtime against the service (issue 49)', () => {
  let t: TestApp;
  let project: RelayProject;
  let environment: Environment;
  const served: string[] = [];
  const warnings: string[] = [];
  const original = { warn: console.warn, error: console.error };
  let categoryDbId: number;
  let petDbId: number;

  before(async () => {
    t = await startApp({ graphqlPlugins: [recordingPlugin(served)] });
    // A fresh database: the first category and the first pet both have database id 1, as the issue reported.
    const category = await t.admin.post('/v1/categories', { name: 'Cats', description: 'Independent' });
    for (const name of ['Whiskers', 'Tom', 'Felix', 'Garfield', 'Salem']) {
      const pet = await t.admin.post('/v1/pets', { name, categoryId: category.body.id });
      assert.equal(pet.status, 201, pet.text);
      petDbId ??= pet.body.id;
    }
    categoryDbId = category.body.id;
    assert.equal(categoryDbId, petDbId, 'a pet and a category share a database id');
    project = await compileRelayProject();
    const { key } = await createAccount(t, { name: 'Relay' });
    environment = (await clientsEnvironment(project.dir))(`${t.url}/graphql`, key);
    // Relay reports a broken store (an id of two types, conflicting fields) through console.warn / console.error.
    console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(' '));
    console.error = (...args: unknown[]) => void warnings.push(args.map(String).join(' '));
  });
  after(async () => {
    Object.assign(console, original);
    await t.close();
    if (project) rmSync(project.dir, { recursive: true, force: true });
  });

  const query = async (request: ConcreteRequest, variables: Record<string, unknown>) => {
    await fetchQuery(environment, request, variables).toPromise();
    const operation = createOperationDescriptor(request, variables);
    environment.retain(operation);
    return environment.lookup(operation.fragment).data as Record<string, any>;
  };
  const read = <T = Record<string, any>>(fragment: string, ref: FragmentRef): T =>
    environment.lookup(getSelector(project.artifact<ReaderFragment>(fragment), ref) as SingularReaderSelector).data as T;

  it('when the app query reads pets and categories that share a database id, then the store keeps them apart and warns of nothing', async () => {
    const data = await query(project.artifact('AppQuery'), {});
    const pets = data.pets.edges.map((e: { node: FragmentRef }) => read('PetCard_pet', e.node));
    const categories = data.categories.edges.map((e: { node: FragmentRef }) => read('CategoryCard_category', e.node));
    assert.deepEqual(
      pets.map((p: { name: string }) => p.name),
      ['Whiskers', 'Tom', 'Felix', 'Garfield', 'Salem'],
    );
    assert.equal(pets[0].category.name, 'Cats');
    assert.deepEqual(categories, [{ id: categories[0].id, name: 'Cats', description: 'Independent' }]);
    assert.notEqual(pets[0].id, categories[0].id);
    assert.deepEqual(warnings, [], 'no warning from the Relay store');
  });

  it('when a Pet and a Category fragment are refetched, then the compiler’s queries go through node(id:) and update the records the app shows', async () => {
    const data = await query(project.artifact('AppQuery'), {});
    const petRef = data.pets.edges[0].node as FragmentRef;
    const categoryRef = data.categories.edges[0].node as FragmentRef & { id: string };
    assert.equal((await t.admin.put(`/v1/pets/${petDbId}`, { name: 'Whiskers II', categoryId: categoryDbId })).status, 200);
    assert.equal((await t.admin.put(`/v1/categories/${categoryDbId}`, { name: 'Cats', description: 'Aloof' })).status, 200);
    served.length = 0;
    await query(project.artifact('PetCardRefetchQuery'), { id: read<{ id: string }>('PetCard_pet', petRef).id });
    await query(project.artifact('CategoryCardRefetchQuery'), { id: categoryRef.id });
    assert.equal(served.length, 2);
    for (const text of served) assert.match(text, /node\(id: \$id\)/);
    assert.equal(read<{ name: string }>('PetCard_pet', petRef).name, 'Whiskers II');
    assert.equal(read<{ description: string }>('CategoryCard_category', categoryRef).description, 'Aloof');
    assert.deepEqual(warnings, []);
  });

  it('when the @connection is paginated with the compiler’s pagination query, then the next pages join the same connection', async () => {
    const data = await query(project.artifact('AppQuery'), {});
    const categoryRef = data.categories.edges[0].node as FragmentRef & { id: string };
    type Pets = { pets: { edges: Array<{ node: FragmentRef }>; pageInfo: { endCursor: string; hasNextPage: boolean } } };
    let page = read<Pets>('CategoryPets_category', categoryRef);
    assert.equal(page.pets.edges.length, 2);
    while (page.pets.pageInfo.hasNextPage) {
      served.length = 0;
      await query(project.artifact('CategoryPetsPaginationQuery'), { id: categoryRef.id, count: 2, cursor: page.pets.pageInfo.endCursor });
      assert.match(served[0]!, /node\(id: \$id\)[\s\S]*pets\(first: \$count, after: \$cursor\)/);
      page = read<Pets>('CategoryPets_category', categoryRef);
    }
    const names = page.pets.edges.map((e) => read<{ name: string }>('PetCard_pet', e.node).name);
    assert.deepEqual(names, ['Whiskers II', 'Tom', 'Felix', 'Garfield', 'Salem']);
    assert.deepEqual(warnings, []);
  });
});

describe('Relay with persisted queries: relay-compiler persistConfig, the manifest as the trusted documents, ids only', () => {
  let t: TestApp;
  let project: RelayProject;
  before(async () => {
    project = await compileRelayProject({ persist: true });
    const manifest = join(project.dir, clientsPersistConfig().file);
    t = await startApp({ env: { GRAPHQL_TRUSTED_DOCUMENTS: manifest, GRAPHQL_TRUSTED_ONLY: 'true' } });
    const category = await t.admin.post('/v1/categories', { name: 'Birds' });
    assert.equal((await t.admin.post('/v1/pets', { name: 'Tweety', categoryId: category.body.id })).status, 201);
  });
  after(async () => {
    await t?.close();
    if (project) rmSync(project.dir, { recursive: true, force: true });
  });

  it("when the app's compiled queries carry ids and no text, then CLIENTS.md's environment sends them as documentId and they are answered, where text is refused", async () => {
    const request = project.artifact<ConcreteRequest>('AppQuery');
    assert.equal(request.params.text, null, 'persisted: the artifact has no text');
    assert.match(String(request.params.id), /^[0-9a-f]{64}$/);
    const { key } = await createAccount(t, { name: 'Relay persisted' });
    const environment = (await clientsEnvironment(project.dir))(`${t.url}/graphql`, key);
    await fetchQuery(environment, request, {}).toPromise();
    const operation = createOperationDescriptor(request, {});
    const data = environment.lookup(operation.fragment).data as { pets: { edges: Array<{ node: FragmentRef }> } };
    assert.equal(data.pets.edges.length, 1);
    const pet = environment.lookup(
      getSelector(project.artifact<ReaderFragment>('PetCard_pet'), data.pets.edges[0]!.node) as SingularReaderSelector,
    ).data as { name: string; category: { name: string } };
    assert.deepEqual([pet.name, pet.category.name], ['Tweety', 'Birds']);
    // The same key's text is refused: the ids were what was served.
    const text = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ query: '{ pets(first: 1) { edges { node { id } } } }' }),
    });
    assert.equal(text.status, 403);
  });
});
