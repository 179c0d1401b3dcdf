import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kind, parse, print, visit, type OperationDefinitionNode } from 'graphql';
import { projectPath } from '../../src/project-path.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { runCli, type CliResult } from './support.js';

type Json = any;

const FIXTURES = projectPath('test/contract/fixtures');

/**
 * The README's example operations (every ```graphql block), one document per operation so that several
 * anonymous operations in one walkthrough block can be compiled side by side: an anonymous one is named
 * `Readme<N>`. A block that does not parse fails here, as it should.
 */
export function readmeOperations(reserved: Set<string>): string[] {
  const readme = readFileSync(projectPath('README.md'), 'utf8');
  const documents: string[] = [];
  let n = 0;
  for (const [, block] of readme.matchAll(/^```graphql\n([\s\S]*?)^```/gm)) {
    const parsed = parse(block!);
    const fragments = parsed.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION);
    // Fragments once, in a document of their own: codegen resolves them across documents.
    if (fragments.length) documents.push(print({ kind: Kind.DOCUMENT, definitions: fragments }));
    for (const def of parsed.definitions) {
      if (def.kind !== Kind.OPERATION_DEFINITION) continue;
      n += 1;
      let name = def.name?.value ?? `Readme${n}`;
      while (reserved.has(name)) name = `${name}_${n}`;
      reserved.add(name);
      const named: OperationDefinitionNode = { ...def, name: { kind: Kind.NAME, value: name } };
      documents.push(print({ kind: Kind.DOCUMENT, definitions: [named] }));
    }
  }
  return documents;
}

interface Workspace {
  dir: string;
  cleanup(): void;
}

/** A temporary project that sees this project's node_modules, with the fixture clients copied in. */
function workspace(name: string): Workspace {
  const dir = mkdtempSync(join(tmpdir(), `petstore-${name}-`));
  symlinkSync(projectPath('node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  for (const file of ['rest-client.ts', 'graphql-client.ts']) copyFileSync(join(FIXTURES, file), join(dir, file));
  mkdirSync(join(dir, 'generated'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Compiles one fixture client (strict) into `out/`; the result carries tsc's diagnostics. */
function compile(dir: string, entry: string): Promise<CliResult> {
  const tsconfig = `tsconfig.${entry}.json`;
  writeFileSync(
    join(dir, tsconfig),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noUncheckedIndexedAccess: true,
        skipLibCheck: true,
        outDir: 'out',
        rootDir: '.',
        lib: ['ES2023'],
        types: ['node'],
      },
      files: [`${entry}.ts`],
    }),
  );
  return runCli('typescript', 'tsc', ['-p', tsconfig], { cwd: dir });
}

/** openapi-typescript: the document → generated/openapi.d.ts. */
async function generateRestTypes(dir: string, document: Json): Promise<CliResult> {
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(document));
  return runCli('openapi-typescript', 'openapi-typescript', ['openapi.json', '-o', 'generated/openapi.d.ts'], { cwd: dir });
}

/** @graphql-codegen/cli, client preset: schema + example operations → generated/graphql/. */
async function generateGraphqlTypes(dir: string, schemaSdl: string): Promise<CliResult> {
  writeFileSync(join(dir, 'schema.graphql'), schemaSdl);
  mkdirSync(join(dir, 'documents'));
  copyFileSync(join(FIXTURES, 'operations.graphql'), join(dir, 'documents', 'operations.graphql'));
  const fixtureNames = new Set(
    parse(readFileSync(join(FIXTURES, 'operations.graphql'), 'utf8')).definitions.flatMap((d) =>
      d.kind === Kind.OPERATION_DEFINITION && d.name ? [d.name.value] : [],
    ),
  );
  for (const [i, doc] of readmeOperations(fixtureNames).entries()) writeFileSync(join(dir, 'documents', `readme-${i + 1}.graphql`), doc);
  writeFileSync(
    join(dir, 'codegen.json'),
    JSON.stringify({
      schema: 'schema.graphql',
      documents: ['documents/*.graphql'],
      generates: {
        'generated/graphql/': {
          preset: 'client',
          presetConfig: { fragmentMasking: false },
          config: { scalars: { DateTime: 'string', SafeInt: 'number' }, strictScalars: true, useTypeImports: true },
        },
      },
      errorsOnly: true,
    }),
  );
  return runCli('@graphql-codegen/cli', 'graphql-codegen', ['--config', 'codegen.json'], { cwd: dir });
}

const explain = (r: CliResult) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`;

describe('contract: typed clients generated from both documents compile and run', () => {
  let t: TestApp;
  let served: Json;
  const spaces: Workspace[] = [];
  const space = (name: string) => {
    const w = workspace(name);
    spaces.push(w);
    return w.dir;
  };

  before(async () => {
    t = await startApp();
    served = (await t.anonymous.get('/v1/openapi.json')).body;
  });
  after(async () => {
    for (const w of spaces) w.cleanup();
    await t.close();
  });

  it('when openapi-typescript generates types from /v1/openapi.json, then the openapi-fetch client compiles and creates, lists and orders pets on the running app', async () => {
    const dir = space('rest-client');
    const generated = await generateRestTypes(dir, served);
    assert.equal(generated.code, 0, explain(generated));
    const compiled = await compile(dir, 'rest-client');
    assert.equal(compiled.code, 0, explain(compiled));

    const { restClient } = (await import(pathToFileURL(join(dir, 'out', 'rest-client.js')).href)) as Json;
    const client = restClient(t.url, t.adminKey);
    const pet = await client.createPetInNewCategory(`Typed ${randomUUID().slice(0, 8)}`, 'Rex');
    assert.equal(pet.name, 'Rex');
    assert.ok((await client.availablePets(100)).some((p: Json) => p.id === pet.id));
    assert.equal(client.describe(pet), `Rex (#${pet.id}, available)`);
    const order = await client.order(pet.id, 1, randomUUID());
    assert.equal(order.petId, pet.id);
    assert.equal(client.describeOrder(order), `#${order.id}: 1 × pet ${pet.id}, open`);
    assert.equal(await client.stock(pet.id), 0);
  });

  it('when graphql-codegen generates typed documents from schema/schema.graphql and the example operations, then the GraphQL client compiles and runs on the running app', async () => {
    const dir = space('graphql-client');
    const generated = await generateGraphqlTypes(dir, readFileSync(projectPath('schema/schema.graphql'), 'utf8'));
    assert.equal(generated.code, 0, explain(generated));
    const compiled = await compile(dir, 'graphql-client');
    assert.equal(compiled.code, 0, explain(compiled));

    const { graphqlClient } = (await import(pathToFileURL(join(dir, 'out', 'graphql-client.js')).href)) as Json;
    const client = graphqlClient(`${t.url}/graphql`, t.adminKey);
    const { petId } = await client.createPetInNewCategory(`Typed GQL ${randomUUID().slice(0, 8)}`, 'Tom');
    assert.ok((await client.availablePets()).some((line: string) => line.startsWith('Tom (Typed GQL')));
    const order = await client.order(petId, 1, randomUUID());
    assert.equal(order.petName, 'Tom');
    assert.equal(order.complete, false);
    assert.equal(typeof (await client.minuteRemaining()), 'number');
  });

  it('when the OpenAPI document drops a property the client reads (Pet.name), then the REST client no longer compiles', async () => {
    const dir = space('rest-breaking');
    const broken = structuredClone(served);
    const pet = broken.components.schemas.Pet;
    assert.ok(pet.properties.name, 'the test expects Pet to declare name itself');
    delete pet.properties.name;
    pet.required = pet.required.filter((r: string) => r !== 'name');
    delete pet.example;
    const generated = await generateRestTypes(dir, broken);
    assert.equal(generated.code, 0, explain(generated));
    const compiled = await compile(dir, 'rest-client');
    assert.notEqual(compiled.code, 0, 'the client must not compile against a document without Pet.name');
    assert.match(compiled.stdout, /rest-client\.ts.*error TS\d+/);
  });

  it('when the GraphQL schema drops a field an example operation selects (Pet.name), then generating or compiling the GraphQL client fails', async () => {
    const dir = space('graphql-breaking');
    const sdl = readFileSync(projectPath('schema/schema.graphql'), 'utf8');
    const broken = print(
      visit(parse(sdl), {
        ObjectTypeDefinition: (node) =>
          node.name.value === 'Pet' ? { ...node, fields: node.fields?.filter((field) => field.name.value !== 'name') } : undefined,
      }),
    );
    assert.ok(!/type Pet \{[^}]*\bname: /.test(broken), 'Pet.name was removed');
    const generated = await generateGraphqlTypes(dir, broken);
    const failed = generated.code !== 0 ? generated : await compile(dir, 'graphql-client');
    assert.notEqual(failed.code, 0, 'the example operations must not pass against a schema without Pet.name');
    assert.match(explain(failed), /Cannot query field "name" on type "Pet"|Property .name. does not exist/);
  });
});
