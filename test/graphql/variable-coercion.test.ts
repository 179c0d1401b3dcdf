/**
 * The request preparation coerces an operation's variables with graphql-jit's compiled coercion first and falls
 * back to graphql-js's `getVariableValues` when that refuses (src/graphql/server/operation-shape.ts). The answer
 * must always be graphql-js's: the same verdict, the same coerced values, the same messages. Checked here over
 * generated inputs (fast-check) for every input type of the service's schema, bare and wrapped in lists and
 * non-nulls, with and without a default: values shaped like the type (so that most are accepted) and noise.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import {
  getVariableValues,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  parse,
  typeFromAST,
  type GraphQLInputType,
  type NamedTypeNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { buildGraphQLSchema } from '../../src/graphql/schema/schema.builder.js';
import {
  coerceVariables,
  compiledCoercion,
  compileVariableParsing,
  failToParseVariables,
} from '../../src/graphql/server/operation-shape.js';

const RUNS = 300;

/** Any JSON value, small: what a client can put anywhere. */
const noise = fc.jsonValue({ maxDepth: 2 });

/** Values shaped like `type` (now and then wrong: a wrong scalar, a missing or unknown field, a null), or noise. */
function arbitraryFor(type: GraphQLInputType, depth = 0): fc.Arbitrary<unknown> {
  if (isNonNullType(type))
    return fc.oneof({ weight: 9, arbitrary: arbitraryFor(type.ofType, depth) }, { weight: 1, arbitrary: fc.constant(null) });
  const shaped = ((): fc.Arbitrary<unknown> => {
    if (isListType(type))
      return fc.oneof(fc.array(arbitraryFor(type.ofType, depth + 1), { maxLength: 4 }), arbitraryFor(type.ofType, depth + 1));
    if (isEnumType(type))
      return fc.oneof(
        fc.constantFrom(...type.getValues().map((v) => v.name)),
        fc.constantFrom('available', 'AVAILABLE', 'constructor', ''),
      );
    if (isInputObjectType(type)) {
      if (depth > 3) return fc.constant({});
      const fields = Object.fromEntries(Object.values(type.getFields()).map((f) => [f.name, arbitraryFor(f.type, depth + 1)]));
      return fc.oneof(
        { weight: 8, arbitrary: fc.record(fields, { requiredKeys: [] }) },
        { weight: 1, arbitrary: fc.record({ ...fields, unknownField: fc.integer() }, { requiredKeys: ['unknownField'] }) },
        { weight: 1, arbitrary: fc.constantFrom([], 'text', 1) },
      );
    }
    if (isScalarType(type)) {
      switch (type.name) {
        case 'ID':
          return fc.oneof(fc.integer({ min: -5, max: 1e6 }).map(String), fc.integer(), fc.constantFrom('', 'abc', 1.5, true, 2 ** 53));
        case 'Int':
          return fc.oneof(fc.integer({ min: -10, max: 200 }), fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 1.5, '5', Number.MAX_SAFE_INTEGER));
        case 'Float':
          return fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom('1.5', true));
        case 'Boolean':
          return fc.oneof(fc.boolean(), fc.constantFrom('true', 0, 1));
        case 'String':
          return fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom(5, false));
        case 'DateTime':
          return fc.oneof(
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
            fc.constantFrom('2026-13-01T00:00:00Z', 'yesterday', '', 0, 1_700_000_000_000),
          );
        default:
          return noise;
      }
    }
    return noise;
  })();
  return fc.oneof({ weight: 8, arbitrary: shaped }, { weight: 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: noise });
}

/** The ways a variable's type spells a named type: bare, non-null, and in lists. */
function wrappings(name: string): string[] {
  return [name, `${name}!`, `[${name}]`, `[${name}!]`, `[${name}!]!`];
}

describe('GraphQL variables: the compiled coercion answers exactly as graphql-js', () => {
  let schema: GraphQLSchema;
  const cases: Array<{
    title: string;
    operation: OperationDefinitionNode;
    type: GraphQLInputType;
    compiled: ReturnType<typeof compiledCoercion>;
  }> = [];
  before(async () => {
    schema = await buildGraphQLSchema();
    const named = Object.values(schema.getTypeMap()).filter(
      (t) => !t.name.startsWith('__') && (isInputObjectType(t) || isEnumType(t) || isScalarType(t)),
    );
    for (const t of named) {
      for (const spelled of wrappings(t.name)) {
        const operation = parse(`query ($v: ${spelled}, $w: Int = 7) { __typename }`).definitions[0] as OperationDefinitionNode;
        const type = typeFromAST(schema, operation.variableDefinitions![0]!.type as NamedTypeNode) as GraphQLInputType;
        cases.push({ title: spelled, operation, type, compiled: compiledCoercion(schema, operation) });
      }
    }
  });

  it('when any input is coerced, then coerceVariables gives graphql-js verdict, values and messages, and the compiled coercion accepts only what graphql-js accepts, with the same values', () => {
    let acceptedByJit = 0;
    let refused = 0;
    for (const { title, operation, type, compiled } of cases) {
      fc.assert(
        fc.property(
          fc.record(
            { v: arbitraryFor(type), w: fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constant(null), fc.constant('x')) },
            { requiredKeys: [] },
          ),
          (inputs) => {
            const js = getVariableValues(schema, operation.variableDefinitions!, inputs, { maxErrors: 50 });
            const jit = compiled?.(inputs);
            if (jit && !failToParseVariables(jit)) {
              acceptedByJit++;
              assert.equal(
                js.errors,
                undefined,
                `${title}: jit accepted ${JSON.stringify(inputs)}, graphql-js refused: ${js.errors?.map((e) => e.message).join('; ')}`,
              );
              assert.deepStrictEqual({ ...jit.coerced }, { ...js.coerced }, `${title}: ${JSON.stringify(inputs)}`);
            }
            const ours = coerceVariables(schema, operation, inputs);
            if (js.errors) {
              refused++;
              assert.ok('errors' in ours, `${title}: ${JSON.stringify(inputs)} was accepted`);
              assert.deepEqual(
                ours.errors.map((e) => e.message),
                js.errors.map((e) => e.message),
              );
            } else {
              assert.ok('variables' in ours, `${title}: ${JSON.stringify(inputs)} was refused`);
              assert.deepStrictEqual({ ...ours.variables }, { ...js.coerced });
            }
          },
        ),
        { numRuns: RUNS, seed: 20261129 },
      );
    }
    // Not vacuous: both sides of the comparison were exercised, many times.
    const compiled = cases.filter((c) => c.compiled).length;
    assert.ok(compiled >= 20, `${compiled} of the cases have a compiled coercion`);
    assert.ok(acceptedByJit > compiled * RUNS * 0.2, `jit accepted ${acceptedByJit} of ${compiled * RUNS}`);
    assert.ok(refused > cases.length * RUNS * 0.1, `graphql-js refused ${refused} of ${cases.length * RUNS}`);
  });

  it("when variables are named after Object.prototype's properties or have defaults of every kind, then coerceVariables still answers as graphql-js", () => {
    const special: Array<[string, fc.Arbitrary<Record<string, unknown>>]> = [
      // JSON.parse keeps "__proto__" as a key (an object literal would set the prototype instead).
      [
        'query ($__proto__: Int, $constructor: String, $toString: ID) { __typename }',
        fc
          .tuple(fc.oneof(fc.integer({ min: 0, max: 200 }), fc.constant(null)), fc.string({ maxLength: 5 }), fc.integer())
          .map(
            ([a, b, c]) =>
              JSON.parse(JSON.stringify({ proto: a, constructor: b, toString: c }).replace('"proto"', '"__proto__"')) as Record<
                string,
                unknown
              >,
          ),
      ],
      [
        'query ($d: DateTime = "2026-01-01T00:00:00Z", $f: Float = 1.5, $n: Int = -0, $e: PetStatus = available, $l: [ID!] = ["1", 2], $b: Boolean = false) { __typename }',
        fc.record(
          {
            n: fc.integer({ min: -3, max: 3 }),
            e: fc.constantFrom('sold', 'lost'),
            l: fc.array(fc.integer({ min: 1, max: 9 }).map(String)),
          },
          { requiredKeys: [] },
        ),
      ],
      [
        'query ($n: Int = 20, $e: PetStatus = available, $s: String = "x", $l: [ID!] = ["1", "2"]) { __typename }',
        fc.record(
          { n: fc.oneof(fc.integer({ min: -3, max: 300 }), fc.constant('5')), s: fc.string({ maxLength: 3 }) },
          { requiredKeys: [] },
        ),
      ],
    ];
    const compiled: boolean[] = [];
    for (const [query, inputs] of special) {
      const operation = parse(query).definitions[0] as OperationDefinitionNode;
      compiled.push(compiledCoercion(schema, operation) !== null);
      fc.assert(
        fc.property(inputs, (values) => {
          const js = getVariableValues(schema, operation.variableDefinitions!, values, { maxErrors: 50 });
          const ours = coerceVariables(schema, operation, values);
          if (js.errors)
            assert.deepEqual(
              'errors' in ours && ours.errors.map((e) => e.message),
              js.errors.map((e) => e.message),
            );
          else
            assert.ok(
              'variables' in ours && isDeepStrictEqual({ ...ours.variables }, { ...js.coerced }),
              `${query}: ${JSON.stringify(values)}`,
            );
        }),
        { numRuns: RUNS, seed: 20261129 },
      );
    }
    // Names from Object.prototype, and defaults a JSON round trip changes (a DateTime, -0), go to graphql-js; the last
    // operation's defaults survive it and keep the compiled coercion.
    assert.deepEqual(compiled, [false, false, true]);
  });

  it('when a variable is an input object, then graphql-js alone coerces it (graphql-jit 0.8 takes an array for an object)', () => {
    const operation = parse('query ($f: PetFilter) { __typename }').definitions[0] as OperationDefinitionNode;
    assert.ok(
      !failToParseVariables(compileVariableParsing(schema, operation.variableDefinitions!)({ f: [] })),
      'graphql-jit accepts it: if it no longer does, this case proves nothing',
    );
    assert.equal(compiledCoercion(schema, operation), null);
    const coerced = coerceVariables(schema, operation, { f: [] });
    assert.ok('errors' in coerced);
    assert.deepEqual(
      coerced.errors.map((e) => e.message),
      ['Variable "$f" got invalid value []; Expected type "PetFilter" to be an object.'],
    );
  });
});
