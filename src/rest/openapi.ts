import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { projectPath } from '../project-path.js';
import type { ErrorDetail } from '../domain/errors.js';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

type Json = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, OperationObject>>;
  components: Json & { parameters?: Record<string, ParameterObject>; responses?: Record<string, Json> };
}

export interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: Json;
  $ref?: string;
}

export interface OperationObject {
  operationId: string;
  tags?: string[];
  deprecated?: boolean;
  security?: unknown[];
  parameters?: ParameterObject[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Json }> };
  responses: Record<string, Json>;
  'x-sunset'?: string;
  'x-stability'?: string;
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export interface CompiledOperation {
  operationId: string;
  method: string;
  /** OpenAPI path template, e.g. `/pets/{petId}`. */
  path: string;
  public: boolean;
  operation: OperationObject;
  hasBody: boolean;
  bodyRequired: boolean;
  validateParams: ValidateFunction;
  validateQuery: ValidateFunction;
  validateHeaders: ValidateFunction;
  /** The lower-case names of the operation's header parameters (what `validateHeaders` checks). */
  headerParameters: string[];
  /** Each header parameter's name as the document writes it, by its lower-case name (an error's `details[].path`). */
  headerNames: Record<string, string>;
  /** The operation's query parameters: the only ones a next page's link carries. */
  queryParameters: ReadonlySet<string>;
  validateBody?: ValidateFunction;
  /**
   * Path and query parameters typed integer. ajv's coercion takes anything `Number()` reads ("1e3",
   * "0x10", " 1"), so these must be plain decimal digits before coercion: one resource, one address.
   */
  integerParameters: { path: string[]; query: string[] };
}

export function loadOpenApiText(): string {
  return readFileSync(projectPath('schema/openapi.yaml'), 'utf8');
}

/** Parses the YAML (the `yaml` package loads here, on first use). */
export function loadOpenApiDocument(text = loadOpenApiText()): OpenApiDocument {
  const { parse } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return parse(text) as OpenApiDocument;
}

/** Where `npm run build` puts the document as JSON, with the SHA-256 of the YAML it came from (scripts/build.mjs). */
export const PRECOMPILED_OPENAPI = 'dist/openapi.json';

/**
 * The document for this YAML text: the build's JSON copy when it was made from exactly this text (one
 * hash and a JSON.parse, and the YAML parser is never loaded: less memory for the service), otherwise
 * the YAML parsed.
 */
export function openApiDocumentFor(text: string): OpenApiDocument {
  try {
    const precompiled = JSON.parse(readFileSync(projectPath(PRECOMPILED_OPENAPI), 'utf8')) as {
      sha256?: string;
      document?: OpenApiDocument;
    };
    if (precompiled.document && precompiled.sha256 === createHash('sha256').update(text).digest('hex')) return precompiled.document;
  } catch {
    // no build copy (a build that did not run scripts/build.mjs): parse the YAML
  }
  return loadOpenApiDocument(text);
}

/** A JSON Schema validator over the document's components; OpenAPI's extra keywords are ignored. */
export function createAjv(options: { coerceTypes?: boolean } = {}): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true, coerceTypes: options.coerceTypes ?? false, useDefaults: true });
  addFormats(ajv);
  return ajv;
}

function resolveParameter(doc: OpenApiDocument, p: ParameterObject): ParameterObject {
  if (!p.$ref) return p;
  const name = p.$ref.replace('#/components/parameters/', '');
  const resolved = doc.components.parameters?.[name];
  if (!resolved) throw new Error(`Unresolved parameter ${p.$ref}`);
  return resolved;
}

function resolveSchema(doc: OpenApiDocument, schema: Json): Json {
  const ref = schema.$ref;
  if (typeof ref !== 'string') return schema;
  const resolved = (doc.components.schemas as Record<string, Json> | undefined)?.[ref.replace('#/components/schemas/', '')];
  if (!resolved) throw new Error(`Unresolved schema ${ref}`);
  return resolveSchema(doc, resolved);
}

/**
 * Rewrites local `#/components/...` refs so that schemas compile against the document added as `openapi`
 * (`prefix`), and leaves out the length bounds of text marked `x-normalized`: those bound the text's normal
 * form, which the domain makes and checks on both facades with its own messages (the raw text of a name
 * padded with spaces or invisible characters may be longer than its normal form).
 */
function rebase(schema: unknown, prefix = 'openapi'): unknown {
  if (Array.isArray(schema)) return schema.map((item) => rebase(item, prefix));
  if (schema && typeof schema === 'object') {
    const out: Json = {};
    const normalized = (schema as Json)['x-normalized'] === true;
    for (const [k, v] of Object.entries(schema)) {
      if (normalized && (k === 'minLength' || k === 'maxLength')) continue;
      out[k] = k === '$ref' && typeof v === 'string' ? `${prefix}${v}` : rebase(v, prefix);
    }
    return out;
  }
  return schema;
}

/** Compiles one validator set per operation, once, at start. */
export function compileOperations(doc: OpenApiDocument): CompiledOperation[] {
  const strictAjv = createAjv();
  const coercingAjv = createAjv({ coerceTypes: true });
  const components = rebase(doc.components, '');
  for (const ajv of [strictAjv, coercingAjv]) ajv.addSchema({ components }, 'openapi');
  const ops: CompiledOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const params = [...((item as { parameters?: ParameterObject[] }).parameters ?? []), ...(operation.parameters ?? [])].map((p) =>
        resolveParameter(doc, p),
      );
      const group = (where: ParameterObject['in'], lowerCase = false) => {
        const properties: Json = {};
        const required: string[] = [];
        for (const p of params.filter((x) => x.in === where)) {
          const name = lowerCase ? p.name.toLowerCase() : p.name;
          properties[name] = rebase(p.schema);
          if (p.required) required.push(name);
        }
        return { type: 'object', properties, required };
      };
      const body = operation.requestBody?.content?.['application/json']?.schema;
      const integers = (where: ParameterObject['in']) =>
        params.filter((p) => p.in === where && resolveSchema(doc, p.schema).type === 'integer').map((p) => p.name);
      ops.push({
        operationId: operation.operationId,
        method,
        path,
        public: Array.isArray(operation.security) && operation.security.length === 0,
        operation,
        hasBody: Boolean(body),
        bodyRequired: Boolean(operation.requestBody?.required),
        validateParams: coercingAjv.compile(group('path')),
        validateQuery: coercingAjv.compile(group('query')),
        validateHeaders: strictAjv.compile(group('header', true)),
        headerParameters: params.filter((p) => p.in === 'header').map((p) => p.name.toLowerCase()),
        queryParameters: new Set(params.filter((p) => p.in === 'query').map((p) => p.name)),
        headerNames: Object.fromEntries(params.filter((p) => p.in === 'header').map((p) => [p.name.toLowerCase(), p.name])),
        validateBody: body ? strictAjv.compile(rebase(body) as Json) : undefined,
        integerParameters: { path: integers('path'), query: integers('query') },
      });
    }
  }
  return ops;
}

/** ajv errors as the public `details` list: `path` is dotted from the root of the checked part. */
export function toDetails(errors: ErrorObject[] | null | undefined, root: string): ErrorDetail[] {
  return (errors ?? []).map((e) => {
    const segments = e.instancePath.split('/').filter(Boolean);
    if (e.keyword === 'additionalProperties') segments.push(String((e.params as { additionalProperty: string }).additionalProperty));
    if (e.keyword === 'required') segments.push(String((e.params as { missingProperty: string }).missingProperty));
    const path = [root, ...segments].filter(Boolean).join('.');
    const message =
      e.keyword === 'additionalProperties'
        ? 'is not a known property'
        : e.keyword === 'required'
          ? 'is required'
          : (e.message ?? 'is invalid');
    return { path, message };
  });
}
