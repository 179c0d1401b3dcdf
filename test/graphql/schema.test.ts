import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { projectPath } from '../../src/project-path.js';
import { buildGraphQLSchema, printGraphQLSchema, SCHEMA_FILE } from '../../src/graphql/schema.builder.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { dataOf, gql } from './support.js';

describe('GraphQL schema: schema/schema.graphql is what the code builds', () => {
  it('when the schema is built from the code, then it equals the committed schema/schema.graphql (run `npm run schema:graphql`)', async () => {
    const committed = readFileSync(projectPath(SCHEMA_FILE), 'utf8');
    assert.equal(printGraphQLSchema(await buildGraphQLSchema()), committed, `${SCHEMA_FILE} is stale: run npm run schema:graphql and commit it`);
  });

  it('when the committed schema is read, then it declares @stability and marks the fields SPEC §3 marks, and deprecates pet(id)', () => {
    const sdl = readFileSync(projectPath(SCHEMA_FILE), 'utf8');
    assert.match(sdl, /^directive @stability\(level: StabilityLevel!\) on FIELD_DEFINITION$/m);
    assert.match(sdl, /^  cancelOrder\(id: ID!\): ID @stability\(level: EXPERIMENTAL\)$/m);
    assert.match(sdl, /^  setInventory\(petId: ID!, quantity: Int!\): InventoryItem @stability\(level: BETA\)$/m);
    assert.match(sdl, /^  \): InventoryItemConnection! @stability\(level: BETA\)$/m, 'inventory is BETA');
    assert.match(sdl, /^  pet\(id: ID!\): Pet @deprecated\(reason: "Use pets\(filter: \{ids: \[\.\.\.\]\}\)"\)$/m);
    assert.equal(sdl.match(/ @stability\(level: [A-Z]+\)$/gm)?.length, 3, 'exactly three fields carry @stability');
  });
});

describe('GraphQL schema: introspection', () => {
  let dev: TestApp;
  let prod: TestApp;
  before(async () => {
    [dev, prod] = await Promise.all([startApp(), startApp({ env: { NODE_ENV: 'production' } })]);
  });
  after(() => Promise.all([dev.close(), prod.close()]));

  it('when a client introspects outside production, then pet(id) reads as deprecated with its successor', async () => {
    const data = dataOf(await gql(dev.admin, '{ __type(name: "Query") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }'));
    const pet = data.__type.fields.find((f: any) => f.name === 'pet');
    assert.deepEqual(pet, { name: 'pet', isDeprecated: true, deprecationReason: 'Use pets(filter: {ids: [...]})' });
    assert.ok(data.__type.fields.filter((f: any) => !f.isDeprecated).some((f: any) => f.name === 'pets'));
  });

  it('when a client introspects without a key, then it is answered (introspection costs nothing and needs no key)', async () => {
    const data = dataOf(await gql(dev.anonymous, '{ __schema { queryType { name } } }'));
    assert.equal(data.__schema.queryType.name, 'Query');
  });

  it('when a client introspects in production, then it is refused as VALIDATION_FAILED', async () => {
    const res = await gql(prod.admin, '{ __schema { types { name } } }');
    assert.equal(res.status, 400);
    assert.equal(res.body.errors?.[0]?.extensions?.code, 'VALIDATION_FAILED');
    assert.equal(res.body.errors?.[0]?.extensions?.status, 400);
    assert.equal(res.body.data, undefined);
  });

  it('when a field is misspelt in production, then the error names no other field of the schema', async () => {
    const res = await gql(prod.admin, '{ pets { edges { node { nme } } } }');
    assert.equal(res.status, 400);
    assert.equal(res.body.errors?.[0]?.extensions?.code, 'VALIDATION_FAILED');
    assert.equal(res.body.errors?.[0]?.extensions?.status, 400);
    assert.match(res.body.errors![0]!.message, /nme/);
    assert.doesNotMatch(res.body.errors![0]!.message, /Did you mean|"name"/);
  });
});
