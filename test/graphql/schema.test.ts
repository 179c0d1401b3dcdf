import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { projectPath } from '../../src/project-path.js';
import { buildGraphQLSchema, printGraphQLSchema, SCHEMA_FILE } from '../../src/graphql/schema/schema.builder.js';
import { HTTP_METHODS, loadOpenApiDocument } from '../../src/rest/openapi.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { dataOf, gql } from './support.js';

describe('GraphQL schema: schema/schema.graphql is what the code builds', () => {
  it('when the schema is built from the code, then it equals the committed schema/schema.graphql (run `npm run schema:graphql`)', async () => {
    const committed = readFileSync(projectPath(SCHEMA_FILE), 'utf8');
    assert.equal(
      printGraphQLSchema(await buildGraphQLSchema()),
      committed,
      `${SCHEMA_FILE} is stale: run npm run schema:graphql and commit it`,
    );
  });

  it('when the committed schema is read, then it declares @stability and marks the fields docs/API.md marks, and deprecates pet(id)', () => {
    const sdl = readFileSync(projectPath(SCHEMA_FILE), 'utf8');
    assert.match(sdl, /^directive @stability\(level: StabilityLevel!\) on FIELD_DEFINITION$/m);
    assert.match(sdl, /^ {2}cancelOrder\(id: ID!\): ID @stability\(level: EXPERIMENTAL\)$/m);
    assert.match(sdl, /^ {2}setInventory\(petId: ID!, quantity: Int!\): InventoryItem @stability\(level: BETA\)$/m);
    assert.match(sdl, /^ {2}\): InventoryItemConnection! @stability\(level: BETA\)$/m, 'inventory is BETA');
    assert.match(sdl, /^ {2}pet\(id: ID!\): Pet @deprecated\(reason: "Use pets\(filter: \{ids: \[\.\.\.\]\}\)"\)$/m);
    assert.equal(sdl.match(/ @stability\(level: [A-Z]+\)$/gm)?.length, 3, 'exactly three fields carry @stability');
  });
});

/** REST operationId → its GraphQL twin (docs/API.md). The two document downloads have none: GraphQL has introspection. */
const TWIN: Record<string, string> = {
  listPets: 'Query.pets',
  createPet: 'Mutation.createPet',
  getPet: 'Query.pet',
  updatePet: 'Mutation.updatePet',
  deletePet: 'Mutation.deletePet',
  listCategories: 'Query.categories',
  createCategory: 'Mutation.createCategory',
  getCategory: 'Query.category',
  updateCategory: 'Mutation.updateCategory',
  deleteCategory: 'Mutation.deleteCategory',
  listOrders: 'Query.orders',
  placeOrder: 'Mutation.placeOrder',
  getOrder: 'Query.order',
  completeOrder: 'Mutation.completeOrder',
  cancelOrder: 'Mutation.cancelOrder',
  listInventory: 'Query.inventory',
  getInventoryItem: 'Query.inventoryItem',
  setInventory: 'Mutation.setInventory',
  getViewer: 'Query.viewer',
  getRateLimit: 'Query.rateLimit',
  listAccounts: 'Query.accounts',
  createAccount: 'Mutation.createAccount',
  updateAccount: 'Mutation.updateAccount',
  createApiKey: 'Mutation.createApiKey',
  listApiKeys: 'Query.apiKeys',
  revokeApiKey: 'Mutation.revokeApiKey',
  liftBan: 'Mutation.liftBan',
  listEvents: 'Query.events',
  listWebhooks: 'Query.webhooks',
  createWebhook: 'Mutation.createWebhook',
  getWebhook: 'Query.webhook',
  updateWebhook: 'Mutation.updateWebhook',
  deleteWebhook: 'Mutation.deleteWebhook',
  rotateWebhookSecret: 'Mutation.rotateWebhookSecret',
  listWebhookDeliveries: 'Query.webhookDeliveries',
  redeliverWebhookDelivery: 'Mutation.redeliverWebhookDelivery',
};
const WITHOUT_TWIN = new Set(['getOpenApiJson', 'getOpenApiYaml']);

describe('GraphQL schema: every REST operation has its GraphQL twin', () => {
  it('when the OpenAPI document and the schema are compared, then each operation has a field with the same deprecation and stability', async () => {
    const schema = await buildGraphQLSchema();
    const doc = loadOpenApiDocument();
    const seen = new Set<string>();
    for (const item of Object.values(doc.paths)) {
      for (const method of HTTP_METHODS) {
        const op = item[method];
        if (!op || WITHOUT_TWIN.has(op.operationId)) continue;
        seen.add(op.operationId);
        const twin = TWIN[op.operationId];
        assert.ok(twin, `REST ${op.operationId} has no GraphQL twin`);
        const [typeName, fieldName] = twin.split('.') as [string, string];
        const field = (typeName === 'Query' ? schema.getQueryType() : schema.getMutationType())!.getFields()[fieldName];
        assert.ok(field, `${twin} (twin of ${op.operationId}) is missing from the schema`);
        assert.equal(Boolean(field.deprecationReason), Boolean(op.deprecated), `${twin} and ${op.operationId} agree on deprecation`);
        const stability = field.astNode?.directives?.find((d) => d.name.value === 'stability');
        const level = stability?.arguments?.[0]?.value.kind === 'EnumValue' ? stability.arguments[0].value.value : undefined;
        assert.equal(level?.toLowerCase(), op['x-stability'], `${twin} and ${op.operationId} agree on stability`);
      }
    }
    assert.deepEqual([...seen].sort(), Object.keys(TWIN).sort(), 'every twin listed here is a REST operation');
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
    const data = dataOf(
      await gql(dev.admin, '{ __type(name: "Query") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }'),
    );
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
