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
    return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? `openapi${v}` : rebase(v)]));
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
      for (const [name, ex] of Object.entries<Json>(media.examples ?? {})) examples.push({ name: `examples.${name}`, value: deref(doc, ex).value });
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
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }> };
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
    const parameters: Array<[string, Json]> = Object.entries<Json>(served.components.parameters ?? {}).map(([n, p]) => [`components.parameters.${n}`, p]);
    for (const [path, item] of Object.entries<Json>(served.paths)) {
      for (const p of item.parameters ?? []) parameters.push([`${path} ${p.name ?? p.$ref}`, deref(served, p)]);
      for (const method of HTTP_METHODS) for (const p of item[method]?.parameters ?? []) parameters.push([`${method.toUpperCase()} ${path} ${p.name ?? p.$ref}`, deref(served, p)]);
    }
    for (const [where, p] of parameters) {
      if (p.example !== undefined && p.schema) check(where, p.schema, p.example);
      if (p.schema?.example !== undefined) check(`${where} (schema)`, p.schema, p.schema.example);
    }
    assert.deepEqual(invalid, []);
  });
});
