import {
  getArgumentValues,
  getNamedType,
  getNullableType,
  getVariableValues,
  isAbstractType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type OperationDefinitionNode,
  visit,
} from 'graphql';
import { collectFields, collectSubFields, type FieldsAndPatches, type VariableValues } from '@graphql-tools/utils';
import type { GraphQLOperationShape } from '../../rate-limit/cost.js';
import { pageSize } from '../../domain/pagination.js';

/** Root fields that only introspect: a keyless caller may send them. */
const INTROSPECTION: ReadonlySet<string> = new Set(['__schema', '__type', '__typename']);
/** Size assumed for a list that has no page size (`apiKeys`): the largest page any list serves. */
const UNPAGED_LIST_SIZE = 100;

export interface OperationShape extends GraphQLOperationShape {
  /** Estimated result size: every field of the answer counted as often as it can appear. */
  nodes: number;
  /** Whether the estimate stopped early because it passed the ceiling (`nodes` is then a lower bound). */
  overCeiling: boolean;
  /** False when the operation only introspects. */
  needsKey: boolean;
  /** A page size (`first`) the domain refuses (outside 1..100), if the operation asks for one. */
  invalidPageSize?: number;
}

/**
 * Coerces the request's variables as execution will (defaults applied), with graphql-js's `getVariableValues`; the
 * errors when they do not fit the operation (execution would refuse the request with the same errors before any
 * resolver).
 */
export function coerceVariables(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  inputs: Record<string, unknown> | undefined,
): { variables: Record<string, unknown> } | { errors: readonly GraphQLError[] } {
  const result = getVariableValues(schema, operation.variableDefinitions ?? [], inputs ?? {}, { maxErrors: 50 });
  return result.errors ? { errors: result.errors } : { variables: result.coerced };
}

/** The fields collected, with those of deferred fragments (none while the schema has no `@defer`): every one runs. */
function everyField({ fields, patches }: FieldsAndPatches): Map<string, readonly FieldNode[]> {
  if (patches.length === 0) return fields;
  const all = new Map<string, readonly FieldNode[]>(fields);
  for (const patch of patches) for (const [key, nodes] of patch.fields) all.set(key, [...(all.get(key) ?? []), ...nodes]);
  return all;
}

const isConnection = (field: GraphQLField<unknown, unknown>): boolean => {
  const type = getNamedType(field.type);
  return field.args.some((a) => a.name === 'first') && isObjectType(type) && 'edges' in type.getFields();
};

/** Whether the domain serves a page of this size (its own rule, `pageSize`). */
function validPageSize(size: number): boolean {
  try {
    pageSize(size, 'first');
    return true;
  } catch {
    return false;
  }
}

/** How many ids `nodes(ids:)` is given (0 when the argument does not coerce: execution refuses it first). */
function idsCountOf(field: GraphQLField<unknown, unknown>, node: FieldNode, variables: Record<string, unknown>): number {
  try {
    const { ids } = getArgumentValues(field, node, variables);
    return Array.isArray(ids) ? ids.length : 0;
  } catch {
    return 0;
  }
}

/** The page size a connection field is asked for: its `first` (literal, variable or default). */
function pageSizeOf(field: GraphQLField<unknown, unknown>, node: FieldNode, variables: Record<string, unknown>): number {
  let first: unknown;
  try {
    first = getArgumentValues(field, node, variables).first;
  } catch {
    // An argument that does not coerce fails at execution, before any resolver: nothing to estimate.
  }
  const fallback = field.args.find((a) => a.name === 'first')?.defaultValue;
  return typeof first === 'number' ? first : typeof fallback === 'number' ? fallback : 1;
}

/**
 * The shape of the operation that will execute, with its coerced variables: root fields by response
 * key, nested connections with the number of parents each is resolved for, and the estimated result
 * size. Fields are collected with `@graphql-tools/utils`' `collectFields` (graphql-js's execution step, published), so
 * fragments, inline fragments, `@skip`/`@include` and field merging count exactly as they run.
 * Stops counting once `ceiling` is passed (a document cannot make this walk long).
 */
export function operationShape(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
  ceiling = Number.POSITIVE_INFINITY,
): OperationShape {
  const fragments: Record<string, FragmentDefinitionNode> = Object.create(null);
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
  const root = schema.getRootType(operation.operation);
  const shape: OperationShape = { rootFields: [], nestedConnectionParents: [], nodes: 0, overCeiling: false, needsKey: false };
  if (!root) return shape;
  const nested: number[] = [];
  const nodesIds: number[] = [];
  // The variables as @graphql-tools/utils takes them (graphql-js 16 reads `coerced` only; `sources` is for 17).
  const collected: VariableValues = { coerced: variables, sources: {} };

  /** Fields selected on `type`, each appearing `parents` times; `pageSize` when `type` is a connection. */
  const walk = (
    type: GraphQLObjectType,
    fields: Map<string, readonly FieldNode[]>,
    parents: number,
    pageSize: number | undefined,
    atRoot: boolean,
  ) => {
    for (const nodes of fields.values()) {
      if (shape.overCeiling) return;
      const node = nodes[0]!;
      const name = node.name.value;
      // Introspection (free): counted by what it answers, so that aliases cannot make it any larger than the limit.
      if (name === '__schema' || name === '__type') {
        shape.nodes += parents * introspectionSize(name === '__schema' ? SchemaMetaFieldDef : TypeMetaFieldDef, type, nodes);
        if (shape.nodes > ceiling) shape.overCeiling = true;
        continue;
      }
      shape.nodes += parents;
      if (shape.nodes > ceiling) {
        shape.overCeiling = true;
        return;
      }
      const field = name === '__typename' ? undefined : type.getFields()[name];
      if (!field) continue;
      const named = getNamedType(field.type);
      if (!isObjectType(named) && !isAbstractType(named)) continue;
      let ownPageSize: number | undefined;
      // `nodes` answers one entry per id: its list is as long as its ids.
      let listSize = pageSize ?? UNPAGED_LIST_SIZE;
      if (atRoot && name === 'nodes' && type === root) nodesIds.push((listSize = idsCountOf(field, node, variables)));
      if (isConnection(field)) {
        const asked = pageSizeOf(field, node, variables);
        if (shape.invalidPageSize === undefined && !validPageSize(asked)) shape.invalidPageSize = asked;
        ownPageSize = Math.max(1, asked);
        if (!atRoot) nested.push(parents);
      }
      const items = isListType(getNullableType(field.type)) ? parents * listSize : parents;
      // An abstract type counts every possible type's selection: an upper bound.
      const runtimeTypes = isAbstractType(named) ? schema.getPossibleTypes(named) : [named];
      for (const runtime of runtimeTypes)
        walk(runtime, everyField(collectSubFields(schema, fragments, collected, runtime, [...nodes])), items, ownPageSize, false);
    }
  };

  /**
   * The fields an introspection root field answers, counted by running graphql-js's own introspection resolvers
   * (they read only the schema), each field once per entry, as execution answers it; stops once past the ceiling.
   */
  const introspectionSize = (meta: GraphQLField<unknown, unknown>, parentType: GraphQLObjectType, nodes: readonly FieldNode[]): number => {
    let count = 0;
    const resolved = (field: GraphQLField<unknown, unknown>, owner: GraphQLObjectType, source: unknown, at: readonly FieldNode[]) => {
      const info: GraphQLResolveInfo = {
        fieldName: field.name,
        fieldNodes: at,
        returnType: field.type,
        parentType: owner,
        path: { prev: undefined, key: field.name, typename: owner.name },
        schema,
        fragments,
        rootValue: undefined,
        operation,
        variableValues: variables,
      };
      let args: Record<string, unknown>;
      try {
        args = getArgumentValues(field, at[0]!, variables);
      } catch {
        // An argument that does not coerce (a null `__type(name:)` through a nullable variable) fails at execution.
        return null;
      }
      return field.resolve ? field.resolve(source, args, undefined, info) : (source as Record<string, unknown>)[field.name];
    };
    const visit = (type: GraphQLOutputType, value: unknown, at: readonly FieldNode[]): void => {
      if (value === null || value === undefined || count > ceiling) return;
      const nullable = isNonNullType(type) ? type.ofType : type;
      if (isListType(nullable)) {
        for (const item of value as Iterable<unknown>) visit(nullable.ofType, item, at);
        return;
      }
      if (isLeafType(nullable) || !isObjectType(nullable)) return;
      for (const fieldNodes of everyField(collectSubFields(schema, fragments, collected, nullable, [...at])).values()) {
        count++;
        const field = nullable.getFields()[fieldNodes[0]!.name.value];
        if (field) visit(field.type, resolved(field, nullable, value, fieldNodes), fieldNodes);
      }
    };
    count++;
    visit(meta.type, resolved(meta, parentType, undefined, nodes), nodes);
    return count;
  };

  const rootFields = everyField(collectFields(schema, fragments, collected, root, operation.selectionSet));
  shape.rootFields = [...rootFields.values()].map((nodes) => nodes[0]!.name.value);
  shape.needsKey = shape.rootFields.some((name) => !INTROSPECTION.has(name));
  walk(root, rootFields, 1, undefined, true);
  shape.nestedConnectionParents = nested;
  if (nodesIds.length) shape.nodesIds = nodesIds;
  return shape;
}

/** Shapes kept per operation (one entry per distinct set of shape-relevant variable values). */
const SHAPES_PER_OPERATION = 64;
const UNDEFINED = '\u0000undefined';

interface OperationShapes {
  /**
   * Variables whose values the shape reads: in a `first` argument or a directive argument (`@skip`/`@include`); all of
   * them in a document that introspects.
   */
  valued: readonly string[];
  /** Variables in an `ids` argument (`nodes`): the shape reads how many ids they hold. */
  counted: readonly string[];
  /** Every other variable of the operation: only whether it is absent, null or set can change the shape. */
  others: readonly string[];
  byVariables: Map<string, OperationShape>;
}

const shapesByOperation = new WeakMap<OperationDefinitionNode, OperationShapes>();

/**
 * Names of the variables that appear inside a `first` argument or inside a directive (`valued`), and inside an `ids`
 * argument (`counted`), anywhere in the document.
 */
function shapeVariables(document: DocumentNode): { valued: Set<string>; counted: Set<string> } {
  const valued = new Set<string>();
  const counted = new Set<string>();
  const every = new Set<string>();
  let introspects = false;
  let depth = 0;
  let inIds = 0;
  visit(document, {
    Field: (node) => void ((node.name.value === '__schema' || node.name.value === '__type') && (introspects = true)),
    Argument: {
      enter: (node) => void (node.name.value === 'first' ? depth++ : node.name.value === 'ids' && inIds++),
      leave: (node) => void (node.name.value === 'first' ? depth-- : node.name.value === 'ids' && inIds--),
    },
    Directive: { enter: () => void depth++, leave: () => void depth-- },
    Variable: (node) => {
      every.add(node.name.value);
      if (depth > 0) valued.add(node.name.value);
      else if (inIds > 0) counted.add(node.name.value);
    },
  });
  // An introspection answer's size follows its arguments (`__type(name:)`, `includeDeprecated`): every value counts.
  if (introspects) for (const name of every) valued.add(name);
  for (const name of valued) counted.delete(name);
  return { valued, counted };
}

/**
 * `operationShape`, computed once per operation of a cached document and per key of the variables that
 * can change it: the values of those the shape reads (`first`, `@skip`/`@include`) and, for every other
 * variable, whether it is absent, null or set (a null where an argument needs a value fails that argument's
 * coercion, and with it the read of `first` beside it). Any other value of a variable (ids, filters, inputs)
 * gives the same shape (an `ids` list: only its length counts), so a request that differs only there reuses it. The document must be the
 * preparation's cached one (the same object for the same query text), or this only costs a little memory until it is
 * collected. `variables` are the coerced ones.
 */
export function cachedOperationShape(...args: Parameters<typeof operationShape>): OperationShape {
  const [schema, document, operation, variables, ceiling = Number.POSITIVE_INFINITY] = args;
  let shapes = shapesByOperation.get(operation);
  if (!shapes) {
    const { valued, counted } = shapeVariables(document);
    const declared = (operation.variableDefinitions ?? []).map((d) => d.variable.name.value);
    shapes = {
      valued: declared.filter((n) => valued.has(n)),
      counted: declared.filter((n) => counted.has(n)),
      others: declared.filter((n) => !valued.has(n) && !counted.has(n)),
      byVariables: new Map(),
    };
    shapesByOperation.set(operation, shapes);
  }
  let key = `${ceiling}\u0000`;
  for (const name of shapes.valued) {
    const value = variables[name];
    key += `${value === undefined ? UNDEFINED : JSON.stringify(value)}\u0000`;
  }
  for (const name of shapes.counted) {
    const value = variables[name];
    key += Array.isArray(value) ? `#${value.length}\u0000` : value === undefined ? 'u' : value === null ? 'n' : 's';
  }
  for (const name of shapes.others) {
    const value = variables[name];
    key += value === undefined ? 'u' : value === null ? 'n' : 's';
  }
  let shape = shapes.byVariables.get(key);
  if (!shape) {
    shape = operationShape(schema, document, operation, variables, ceiling);
    if (shapes.byVariables.size < SHAPES_PER_OPERATION) shapes.byVariables.set(key, shape);
  }
  return shape;
}
