import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { projectPath } from '../../src/project-path.js';
import { compileOperations, loadOpenApiDocument, type CompiledOperation } from '../../src/rest/openapi.js';
import { STATUS_OF, type ErrorCode } from '../../src/http/error-status.js';
import { restCost } from '../../src/rate-limit/cost.js';

type Json = any;

/**
 * The Prism-style check, without a proxy: every REST operation's possible answers are derived from the
 * code (the router's common answers + the error codes its handler can reach), and each must be listed
 * for that operation in schema/openapi.yaml: its status among the operation's responses, and its code
 * named by that response (in its description or an example).
 */

const ERROR_CLASSES = new Set(['DomainError', 'ReplayedDomainError', 'HttpError', 'RateLimitRefusal']);
/** Functions that make an error of the code given as their first argument (src/domain/errors.ts). */
const ERROR_FACTORIES = new Set(['aboutResource']);
/** Where a handler's calls are followed: the domain and the HTTP edge (the database and limiter answer 503/429, common to all). */
const FOLLOWED = /[\\/]src[\\/](domain|rest|http)[\\/]/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
  );
}

/** The body of a function-like declaration (function, method, arrow in a const or property), if it has one. */
function bodyOf(decl: ts.Declaration): ts.Node | undefined {
  if (
    ts.isFunctionDeclaration(decl) ||
    ts.isMethodDeclaration(decl) ||
    ts.isGetAccessorDeclaration(decl) ||
    ts.isConstructorDeclaration(decl)
  )
    return decl.body;
  if ((ts.isVariableDeclaration(decl) || ts.isPropertyDeclaration(decl) || ts.isPropertyAssignment(decl)) && decl.initializer) {
    const init = decl.initializer;
    if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) return init.body;
  }
  return undefined;
}

/**
 * For each REST handler (a property named after an operationId in src/rest/*.routes.ts), the error codes
 * it can raise: every `new DomainError('CODE', …)` (or HttpError, …, or `aboutResource('CODE', …)`) in its body and in every function
 * or method of src/domain, src/rest and src/http it calls, transitively (resolved by the type checker).
 */
function handlerCodes(operationIds: Set<string>): Map<string, Set<string>> {
  const files = sourceFiles(projectPath('src'));
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    experimentalDecorators: true,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const memo = new Map<ts.Node, Set<string>>();

  const codesIn = (root: ts.Node): Set<string> => {
    const known = memo.get(root);
    if (known) return known;
    const codes = new Set<string>();
    memo.set(root, codes);
    const visit = (node: ts.Node): void => {
      const made =
        (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && ERROR_CLASSES.has(node.expression.text)) ||
        (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && ERROR_FACTORIES.has(node.expression.text));
      if (made) {
        const first = node.arguments?.[0];
        if (first && ts.isStringLiteralLike(first)) codes.add(first.text);
      }
      if (ts.isCallExpression(node)) {
        const callee = ts.isPropertyAccessExpression(node.expression) ? node.expression.name : node.expression;
        let symbol = checker.getSymbolAtLocation(callee);
        if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
        for (const decl of symbol?.declarations ?? []) {
          if (!FOLLOWED.test(decl.getSourceFile().fileName)) continue;
          const body = bodyOf(decl);
          if (body) for (const code of codesIn(body)) codes.add(code);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(root);
    return codes;
  };

  const byOperation = new Map<string, Set<string>>();
  for (const file of program.getSourceFiles()) {
    if (!/[\\/]src[\\/]rest[\\/][^\\/]+\.routes\.ts$/.test(file.fileName)) continue;
    const visit = (node: ts.Node): void => {
      if (
        (ts.isPropertyAssignment(node) || ts.isMethodDeclaration(node)) &&
        ts.isIdentifier(node.name) &&
        operationIds.has(node.name.text)
      ) {
        const body = ts.isMethodDeclaration(node) ? node.body : bodyOf(node);
        if (body) byOperation.set(node.name.text, new Set(codesIn(body)));
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return byOperation;
}

/**
 * What the router and the HTTP edge can answer on an operation, whatever its handler does: a request
 * that does not match the document (400), the per-address limiter of failed authentications (429) and
 * an unexpected error or an unreachable dependency (500, 503), on every operation; without a valid key
 * (401) where one is needed; a key over its limit or banned (429) where the operation costs something;
 * a body too large or not JSON (413, 415) where the operation takes one.
 */
function commonCodes(op: CompiledOperation): ErrorCode[] {
  const codes: ErrorCode[] = ['VALIDATION_FAILED', 'RATE_LIMITED', 'INTERNAL', 'UNAVAILABLE'];
  if (!op.public) codes.push('UNAUTHENTICATED', 'INVALID_API_KEY');
  if (restCost(op) > 0) codes.push('API_KEY_BANNED');
  if (op.hasBody) codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
  return codes;
}

/**
 * Answers of the server before any route is chosen, documented once in the Error schema rather than on
 * each operation: 405 (a method the path does not have), 408 (a request not received in time) and 431
 * (headers too large) are not answers of an operation.
 */
const NOT_PER_OPERATION: ReadonlySet<ErrorCode> = new Set(['METHOD_NOT_ALLOWED', 'REQUEST_TIMEOUT', 'HEADERS_TOO_LARGE']);

function pointer(doc: Json, ref: string): Json {
  return ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}
const deref = (doc: Json, node: Json): Json => (node && typeof node.$ref === 'string' ? deref(doc, pointer(doc, node.$ref)) : node);

/** Whether a response names a code: in its description, or as the `code` of one of its examples. */
function names(response: Json, code: string): boolean {
  if (typeof response.description === 'string' && response.description.includes(`\`${code}\``)) return true;
  const media = response.content?.['application/json'];
  const examples = [media?.example, ...Object.values<Json>(media?.examples ?? {}).map((e) => e.value)];
  return examples.some((e) => e?.code === code);
}

describe('contract: every answer an operation can give is in the document', () => {
  const doc = loadOpenApiDocument() as Json;
  const ops = compileOperations(doc);
  const codesByOperation = handlerCodes(new Set(ops.map((op) => op.operationId)));

  it('when the route table is walked, then every operation has a handler whose error codes could be read', () => {
    const unread = ops.filter((op) => !codesByOperation.has(op.operationId)).map((op) => op.operationId);
    assert.deepEqual(unread, []);
    // The walk reaches the domain: a few known answers, so a broken walk cannot pass by finding nothing.
    assert.ok(codesByOperation.get('placeOrder')?.has('INSUFFICIENT_STOCK'), 'placeOrder reaches INSUFFICIENT_STOCK');
    assert.ok(codesByOperation.get('createWebhook')?.has('PLAN_LIMIT_REACHED'), 'createWebhook reaches PLAN_LIMIT_REACHED');
    assert.ok(codesByOperation.get('getPet')?.has('OPERATION_SUNSET'), 'getPet reaches OPERATION_SUNSET');
    assert.ok(codesByOperation.get('deletePet')?.has('FORBIDDEN'), 'deletePet reaches FORBIDDEN');
  });

  it('when each operation is checked, then every status and error code it can answer is listed for it', () => {
    const missing: string[] = [];
    for (const op of ops) {
      const where = `${op.method.toUpperCase()} ${op.path} (${op.operationId})`;
      const responses = op.operation.responses as Record<string, Json>;
      if (op.method === 'get' && !responses['304']) missing.push(`${where}: 304 (conditional GET)`);
      const codes = new Set<string>([...commonCodes(op), ...(codesByOperation.get(op.operationId) ?? [])]);
      for (const code of codes) {
        assert.ok(code in STATUS_OF, `${where} raises ${code}, which is not in the error catalogue (src/http/error-status.ts)`);
        if (NOT_PER_OPERATION.has(code as ErrorCode)) continue;
        const status = String(STATUS_OF[code as ErrorCode]);
        const response = deref(doc, responses[status]);
        if (!response) missing.push(`${where}: ${status} (${code})`);
        else if (!names(response, code)) missing.push(`${where}: ${status} does not name ${code}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('when the Error schema is read, then its code enum is exactly the error catalogue, and it and the introduction give each code its status', () => {
    const error = doc.components.schemas.Error;
    assert.deepEqual([...error.properties.code.enum].sort(), Object.keys(STATUS_OF).sort());
    const unstated = Object.entries(STATUS_OF)
      .filter(
        ([code, status]) =>
          !new RegExp(`\`${code}\` ${status}\\b`).test(error.description) || !doc.info.description.includes(`| \`${code}\` | ${status} |`),
      )
      .map(([code, status]) => `${code} ${status}`);
    assert.deepEqual(unstated, []);
  });

  it('when a response schema is read, then every property the service always sends is required (openapi-typescript sees it defined)', () => {
    // Sent only sometimes: a category's description is left out when it has none; `details` only on VALIDATION_FAILED.
    const optional = new Set(['Category.description', 'Error.details']);
    const seen = new Set<string>();
    const visit = (name: string | undefined, schema: Json): void => {
      if (!schema || typeof schema !== 'object') return;
      if (typeof schema.$ref === 'string') {
        const ref = schema.$ref.replace('#/components/schemas/', '');
        if (seen.has(ref)) return;
        seen.add(ref);
        visit(ref, pointer(doc, schema.$ref));
        return;
      }
      for (const part of [...(schema.oneOf ?? []), ...(schema.allOf ?? []), ...(schema.anyOf ?? [])]) visit(undefined, part);
      if (schema.items) visit(undefined, schema.items);
      for (const [property, sub] of Object.entries<Json>(schema.properties ?? {})) {
        const where = `${name ?? '(inline)'}.${property}`;
        if (!optional.has(where) && !(schema.required ?? []).includes(property)) notRequired.push(where);
        visit(undefined, sub);
      }
    };
    const notRequired: string[] = [];
    for (const op of ops) {
      for (const response of Object.values<Json>(op.operation.responses)) {
        for (const media of Object.values<Json>(deref(doc, response).content ?? {})) visit(undefined, media.schema);
      }
    }
    for (const hook of Object.values<Json>(doc['x-webhooks'] ?? {})) {
      for (const media of Object.values<Json>(hook.post?.requestBody?.content ?? {})) visit(undefined, media.schema);
    }
    assert.ok(seen.has('Order') && seen.has('OrderEvent') && seen.has('WebhookDelivery'), 'the walk reaches the response schemas');
    assert.deepEqual([...new Set(notRequired)], []);
  });

  it('when an operation lists a status, then some code of the catalogue has it (no status the service never answers)', () => {
    const answered = new Set(Object.values(STATUS_OF).map(String));
    const stray: string[] = [];
    for (const op of ops) {
      for (const status of Object.keys(op.operation.responses)) {
        if (Number(status) >= 400 && !answered.has(status)) stray.push(`${op.operationId}: ${status}`);
      }
    }
    assert.deepEqual(stray, []);
  });
});
