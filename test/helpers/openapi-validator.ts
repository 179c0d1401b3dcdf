import assert from 'node:assert/strict';
import type { ValidateFunction } from 'ajv';
import { createAjv, HTTP_METHODS, loadOpenApiDocument, type OpenApiDocument } from '../../src/rest/openapi.js';

interface ResponseSpec {
  validateBody?: ValidateFunction;
  requiredHeaders: string[];
}

interface Route {
  method: string;
  pattern: RegExp;
  template: string;
  responses: Map<string, ResponseSpec>;
}

let routes: Route[] | undefined;

function rebase(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebase);
  if (schema && typeof schema === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(schema)) out[k] = k === '$ref' && typeof v === 'string' ? `openapi${v}` : rebase(v);
    return out;
  }
  return schema;
}

function deref<T>(doc: OpenApiDocument, value: T): T {
  const ref = (value as { $ref?: string })?.$ref;
  if (!ref) return value;
  const parts = ref.replace('#/', '').split('/');
  let node: unknown = doc;
  for (const p of parts) node = (node as Record<string, unknown>)[p];
  return deref(doc, node as T);
}

function compile(): Route[] {
  const doc = loadOpenApiDocument();
  const ajv = createAjv();
  ajv.addSchema({ components: doc.components }, 'openapi');
  const out: Route[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      const responses = new Map<string, ResponseSpec>();
      for (const [status, raw] of Object.entries(op.responses)) {
        const response = deref(doc, raw) as {
          content?: Record<string, { schema: unknown }>;
          headers?: Record<string, { required?: boolean }>;
        };
        const schema = response.content?.['application/json']?.schema;
        const requiredHeaders = Object.entries(response.headers ?? {})
          .filter(([, h]) => deref(doc, h).required)
          .map(([name]) => name.toLowerCase());
        responses.set(status, { validateBody: schema ? ajv.compile(rebase(schema) as object) : undefined, requiredHeaders });
      }
      out.push({
        method: method.toUpperCase(),
        template: path,
        pattern: new RegExp(`^/v1${path.replace(/\{\w+\}/g, '[^/]+')}$`),
        responses,
      });
    }
  }
  return out;
}

/**
 * Asserts that a /v1 response is one the OpenAPI document describes: a documented status for the
 * operation, a body matching its schema, and every header the document marks required. Unknown
 * routes must answer with the documented Error shape.
 */
export function assertMatchesOpenApi(method: string, url: string, status: number, headers: Headers, body: unknown): void {
  routes ??= compile();
  const path = new URL(url, 'http://x').pathname;
  if (!path.startsWith('/v1')) return;
  const route = routes.find((r) => r.method === method && r.pattern.test(path));
  const where = `${method} ${path} → ${status}`;
  if (!route) {
    // Unrouted requests (404/405) still use the Error shape.
    assert.ok(status >= 400, `${where}: undocumented route answered ${status}`);
    assert.equal(typeof (body as { code?: unknown })?.code, 'string', `${where}: error body without code`);
    return;
  }
  const spec = route.responses.get(String(status)) ?? route.responses.get(`${String(status)[0]}XX`) ?? route.responses.get('default');
  assert.ok(spec, `${where}: status ${status} is not documented for ${route.method} ${route.template}`);
  if (spec.validateBody) {
    const ok = spec.validateBody(body);
    assert.ok(
      ok,
      `${where}: body does not match the document: ${JSON.stringify(spec.validateBody.errors)}\nbody: ${JSON.stringify(body)?.slice(0, 500)}`,
    );
  }
  for (const name of spec.requiredHeaders) {
    assert.ok(headers.has(name), `${where}: required header ${name} is missing`);
  }
}
