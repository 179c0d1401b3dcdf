import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createAjv, HTTP_METHODS, loadOpenApiDocument } from '../../src/rest/openapi.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { runCli } from './support.js';

type Json = any;

function pointer(doc: Json, ref: string): Json {
  assert.ok(ref.startsWith('#/'), `only local refs are used in this document: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((node, key) => node?.[key], doc);
}

function deref(doc: Json, node: Json): Json {
  while (node && typeof node.$ref === 'string') node = pointer(doc, node.$ref);
  return node;
}

/** Local `#/components/...` refs rewritten to point into the document added to ajv as `openapi`. */
function rebase(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(rebase);
  if (schema && typeof schema === 'object') {
    return Object.fromEntries(
      Object.entries(schema).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? `openapi${v}` : rebase(v)]),
    );
  }
  return schema;
}

interface Sample {
  where: string;
  schema: Json;
  examples: Array<{ name: string; value: unknown }>;
}

/** Every request and response body of every operation, with the examples the document gives for it. */
function bodySamples(doc: Json): Sample[] {
  const samples: Sample[] = [];
  const collect = (where: string, content: Record<string, Json> | undefined) => {
    for (const [mediaType, media] of Object.entries(content ?? {})) {
      if (!media.schema) continue;
      const examples: Sample['examples'] = [];
      if (media.example !== undefined) examples.push({ name: 'example', value: media.example });
      for (const [name, ex] of Object.entries<Json>(media.examples ?? {}))
        examples.push({ name: `examples.${name}`, value: deref(doc, ex).value });
      const schema = deref(doc, media.schema);
      if (examples.length === 0 && schema.example !== undefined) examples.push({ name: 'schema example', value: schema.example });
      samples.push({ where: `${where} ${mediaType}`, schema: media.schema, examples });
    }
  };
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      const name = `${method.toUpperCase()} ${path}`;
      collect(`${name} request`, deref(doc, op.requestBody)?.content);
      for (const [status, response] of Object.entries<Json>(op.responses)) collect(`${name} ${status}`, deref(doc, response).content);
    }
  }
  return samples;
}

describe('contract: the OpenAPI document', () => {
  let t: TestApp;
  let served: Json;

  before(async () => {
    t = await startApp();
    const res = await t.anonymous.get('/v1/openapi.json');
    assert.equal(res.status, 200);
    served = res.body;
  });
  after(() => t.close());

  it('when the served /v1/openapi.json is compared with schema/openapi.yaml, then they are the same document', () => {
    assert.deepEqual(served, JSON.parse(JSON.stringify(loadOpenApiDocument())));
  });

  it('when Redocly CLI lints it with the recommended rules (redocly.yaml), then there are no errors and no warnings', async () => {
    const { code, stdout, stderr } = await runCli('@redocly/cli', 'redocly', ['lint', '--format=json']);
    assert.ok(stdout.trim().startsWith('{'), `redocly lint exited ${code}: ${stderr}`);
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }>;
    };
    const problems = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`);
    assert.deepEqual(problems, []);
    assert.equal(report.totals.errors, 0);
  });

  it('when swagger-parser validates the served document, then it is a valid OpenAPI 3.0.3 document whose refs all resolve', async () => {
    const api = (await SwaggerParser.validate(structuredClone(served))) as Json;
    assert.equal(api.openapi, '3.0.3');
    assert.equal(api.info.version, '1.0.0');
  });

  it('when every request and response body is listed, then each has an example that validates against its schema', () => {
    const ajv = createAjv();
    ajv.addSchema({ components: served.components }, 'openapi');
    const samples = bodySamples(served);
    assert.ok(samples.length > 50, `expected many bodies, found ${samples.length}`);
    const missing = samples.filter((s) => s.examples.length === 0).map((s) => s.where);
    assert.deepEqual(missing, [], 'bodies without an example');
    const invalid: string[] = [];
    for (const sample of samples) {
      const validate = ajv.compile(rebase(sample.schema));
      for (const example of sample.examples) {
        if (!validate(example.value)) invalid.push(`${sample.where} (${example.name}): ${ajv.errorsText(validate.errors)}`);
      }
    }
    assert.deepEqual(invalid, []);
  });

  it('when every GET operation is called with its documented parameter examples, then the service accepts them (no 400)', async () => {
    // Swagger UI's try-it on /docs pre-fills these examples, so each must be a value the service takes.
    const refused: string[] = [];
    for (const [path, item] of Object.entries<Json>(served.paths)) {
      const op = item.get;
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: Json) => deref(served, p));
      let url = path;
      const query = new URLSearchParams();
      for (const p of params) {
        const example = p.example ?? deref(served, p.schema)?.example;
        if (example === undefined) continue;
        if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(String(example)));
        if (p.in === 'query') query.set(p.name, String(example));
      }
      if (/\{/.test(url)) continue;
      const res = await t.admin.get(`/v1${url}${query.size ? `?${query}` : ''}`);
      if (res.status === 400) refused.push(`GET ${path}?${query}: ${JSON.stringify(res.body)}`);
    }
    assert.deepEqual(refused, []);
  });

  it('when schemas and parameters carry examples of their own, then those validate too', () => {
    const ajv = createAjv();
    ajv.addSchema({ components: served.components }, 'openapi');
    const invalid: string[] = [];
    const check = (where: string, schema: Json, value: unknown) => {
      const validate = ajv.compile(rebase(schema));
      if (!validate(value)) invalid.push(`${where}: ${ajv.errorsText(validate.errors)}`);
    };
    for (const [name, schema] of Object.entries<Json>(served.components.schemas ?? {})) {
      if (schema.example !== undefined) check(`components.schemas.${name}`, { $ref: `#/components/schemas/${name}` }, schema.example);
    }
    const parameters: Array<[string, Json]> = Object.entries<Json>(served.components.parameters ?? {}).map(([n, p]) => [
      `components.parameters.${n}`,
      p,
    ]);
    for (const [path, item] of Object.entries<Json>(served.paths)) {
      for (const p of item.parameters ?? []) parameters.push([`${path} ${p.name ?? p.$ref}`, deref(served, p)]);
      for (const method of HTTP_METHODS)
        for (const p of item[method]?.parameters ?? [])
          parameters.push([`${method.toUpperCase()} ${path} ${p.name ?? p.$ref}`, deref(served, p)]);
    }
    for (const [where, p] of parameters) {
      if (p.example !== undefined && p.schema) check(where, p.schema, p.example);
      if (p.schema?.example !== undefined) check(`${where} (schema)`, p.schema, p.schema.example);
    }
    assert.deepEqual(invalid, []);
  });
});

describe('contract: the OpenAPI document says what the service sends', () => {
  let t: TestApp;
  let doc: Json;
  before(async () => {
    t = await startApp();
    doc = loadOpenApiDocument();
  });
  after(() => t.close());

  it("when an order asks for too many units, then the answer is the document's validation-error example (path and message), in all three places", async () => {
    const category = await t.admin.post('/v1/categories', { name: 'Examples' });
    const pet = await t.admin.post('/v1/pets', { name: 'Sample', categoryId: category.body.id });
    const res = await t.admin.post('/v1/store/orders', { petId: pet.body.id, quantity: 101 });
    assert.equal(res.status, 400);
    const { requestId, ...answer } = res.body;
    assert.ok(requestId);
    const infoExample = JSON.parse(/```json\n([\s\S]*?)```/.exec(doc.info.description)![1]!);
    for (const [where, example] of [
      ['info.description', infoExample],
      ['components.responses.BadRequest', doc.components.responses.BadRequest.content['application/json'].example],
      ['components.schemas.Error', doc.components.schemas.Error.example],
    ]) {
      const { requestId: _id, ...shown } = example;
      assert.deepEqual(shown, answer, where);
    }
  });

  it('when /openapi.json and /openapi.yaml are fetched with and without a key, then every rate-limit header sent is documented, and Cache-Control is the documented one', async () => {
    for (const [path, operationId] of [
      ['/openapi.json', 'getOpenApiJson'],
      ['/openapi.yaml', 'getOpenApiYaml'],
    ] as const) {
      const documented = doc.paths[path].get.responses['200'].headers;
      assert.equal(doc.paths[path].get.operationId, operationId);
      const cacheControl = deref(doc, documented['Cache-Control']);
      for (const client of [t.admin, t.anonymous]) {
        const res = await client.get(`/v1${path}`);
        assert.equal(res.status, 200);
        const sent = [...res.headers.keys()].filter((name) => /^(x-)?ratelimit/i.test(name));
        assert.ok(sent.includes('x-ratelimit-limit'), `${path}: rate-limit headers are sent`);
        const names = Object.keys(documented).map((n) => n.toLowerCase());
        for (const name of sent) assert.ok(names.includes(name), `${path}: ${name} is sent and must be documented`);
        assert.deepEqual(cacheControl.schema.enum, [res.headers.get('cache-control')], `${path}: Cache-Control`);
      }
    }
  });

  it('when names are bounded, then the schemas say so (minLength/maxLength), and the service still answers its documented messages', async () => {
    const schemas = doc.components.schemas;
    const bounds = (schema: Json) => [schema.minLength, schema.maxLength];
    assert.deepEqual(bounds(schemas.NewPet.properties.name), [1, 100]);
    assert.deepEqual(bounds(schemas.NewCategory.properties.name), [1, 100]);
    assert.deepEqual(bounds(schemas.NewCategory.properties.description), [undefined, 1000]);
    assert.deepEqual(bounds(schemas.NewAccount.properties.name), [1, 100]);
    assert.deepEqual(bounds(schemas.AccountUpdate.properties.name), [1, 100]);
    const nameParameter = doc.paths['/pets'].get.parameters.map((p: Json) => deref(doc, p)).find((p: Json) => p.name === 'name');
    assert.deepEqual(bounds(nameParameter.schema), [1, 100]);

    // A validator generated from the document refuses what the service refuses.
    const ajv = createAjv();
    ajv.addSchema({ components: doc.components }, 'openapi');
    const newCategory = ajv.compile({ $ref: 'openapi#/components/schemas/NewCategory' });
    assert.equal(newCategory({ name: 'x'.repeat(101) }), false);
    assert.equal(newCategory({ name: '' }), false);
    assert.equal(newCategory({ name: 'ok', description: 'd'.repeat(1001) }), false);
    assert.equal(newCategory({ name: 'x'.repeat(100), description: 'd'.repeat(1000) }), true);

    const long = await t.admin.post('/v1/categories', { name: 'x'.repeat(101) });
    assert.equal(long.status, 400);
    assert.equal(long.body.message, 'name must be 1 to 100 characters after trimming.');
    assert.deepEqual(long.body.details, [{ path: 'name', message: 'must be 1 to 100 characters after trimming' }]);
    const description = await t.admin.post('/v1/categories', { name: 'Described', description: 'd'.repeat(1001) });
    assert.equal(description.body.message, 'description must be at most 1000 characters.');
    const query = await t.admin.get(`/v1/pets?name=${'z'.repeat(101)}`);
    assert.equal(query.body.message, 'name must be 1 to 100 characters after trimming.');
    const account = await t.admin.post('/v1/accounts', { name: '', role: 'customer', plan: 'free' });
    assert.equal(account.body.message, 'name must be 1 to 100 characters after trimming.');
    // The bounds are the normal form's: a name of 100 characters padded with spaces is trimmed, not refused.
    const padded = await t.admin.post('/v1/categories', { name: `  ${'p'.repeat(100)}  ` });
    assert.equal(padded.status, 201, padded.text);
    assert.equal(padded.body.name, 'p'.repeat(100));
  });
});
