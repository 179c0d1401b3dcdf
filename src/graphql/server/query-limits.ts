import { ApolloArmor } from '@escape.tech/graphql-armor';
import {
  GraphQLError,
  Kind,
  MaxIntrospectionDepthRule,
  parse,
  type DocumentNode,
  type FragmentDefinitionNode,
  type ParseOptions,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import { validationFailed } from '../../domain/errors.js';

/** GraphQL Armor prefixes its refusals with "Syntax Error: "; the document's syntax is fine, a limit was exceeded. */
const ARMOR_PREFIX = /^Syntax Error: /;

/** Reports an Armor refusal as a validation error that says only what was exceeded. */
const reportLimit = (context: ValidationContext | null, error: GraphQLError) => {
  context?.reportError(new GraphQLError(error.message.replace(ARMOR_PREFIX, ''), { nodes: error.nodes }));
};

/**
 * Limits on the shape of a GraphQL document (OWASP GraphQL cheat sheet), enforced before anything
 * executes or is charged: tokens while parsing (graphql-js's own `maxTokens`, so an oversized document
 * is never fully parsed), then depth, aliases and directives as validation rules (GraphQL Armor). The
 * size of the answer depends on the request's variables, so it is checked once the operation is
 * resolved (see request-preparation.ts), not here. A refusal is a 400 VALIDATION_FAILED naming the
 * limit. Field suggestions ("Did you mean …") are left out of every request error (error.mapping.ts).
 */
export function queryLimits(limits: Config['graphqlLimits']): { parseOptions: ParseOptions; validationRules: ValidationRule[] } {
  const refusal = { onReject: [reportLimit], propagateOnRejection: false };
  const armor = new ApolloArmor({
    maxTokens: { enabled: false },
    // Depth counts fields only: a fragment (spread or inline) does not nest the answer (Armor counts it as a level).
    maxDepth: { n: limits.maxDepth, ignoreIntrospection: true, flattenFragments: true, ...refusal },
    // Every alias counts, `__typename` ones included (Armor exempts those by default).
    maxAliases: { n: limits.maxAliases, allowList: [], ...refusal },
    maxDirectives: { n: 50, ...refusal },
    costLimit: { enabled: false },
    // Suggestions are dropped from the message, not replaced by Armor's "[Suggestion hidden]" (error.mapping.ts).
    blockFieldSuggestion: { enabled: false },
  }).protect();
  // graphql-js's own guard for what the depth limit leaves out: introspection nested through `fields`, `interfaces`,
  // `possibleTypes` or `inputFields` three times or more.
  return { parseOptions: { maxTokens: limits.maxTokens }, validationRules: [...armor.validationRules, MaxIntrospectionDepthRule] };
}

/**
 * Fields that repeat a response name already asked for in the same selection set (through inline fragments and
 * fragment spreads too), counted over the whole document. graphql-js's OverlappingFieldsCanBeMerged compares
 * every pair of such fields, and the pairs' sub-selections pair by pair again: its work grows with the square of
 * the repeats at each level (`{ rateLimit { plan } rateLimit { plan } … }` 239 times took 50 ms of validation).
 * Counted in one pass over the parsed document, so a document over the limit is refused before it is validated.
 */
export function repeatedFields(document: DocumentNode, stopAt: number): { count: number; example?: string } {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  // Response names of a fragment's top selection set, spreads expanded: computed once per fragment.
  const flattened = new Map<string, Map<string, number>>();
  const namesOf = (set: SelectionSetNode, into: Map<string, number>, spread: Set<string>, visiting: Set<string>) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.alias?.value ?? selection.name.value;
        into.set(name, (into.get(name) ?? 0) + 1);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        namesOf(selection.selectionSet, into, spread, visiting);
      } else {
        // graphql-js collects a fragment once per selection set, however often it is spread; a cycle is validation's to report.
        const name = selection.name.value;
        if (spread.has(name) || visiting.has(name)) continue;
        spread.add(name);
        for (const [field, times] of fragmentNames(name, visiting)) into.set(field, (into.get(field) ?? 0) + times);
      }
    }
  };
  const fragmentNames = (name: string, visiting: Set<string>): Map<string, number> => {
    const known = flattened.get(name);
    if (known) return known;
    const names = new Map<string, number>();
    const fragment = fragments.get(name);
    if (fragment) {
      visiting.add(name);
      namesOf(fragment.selectionSet, names, new Set(), visiting);
      visiting.delete(name);
    }
    flattened.set(name, names);
    return names;
  };
  let count = 0;
  let example: string | undefined;
  // Every selection set that scopes response names: an operation's, a fragment's and each field's.
  const sets: SelectionSetNode[] = [];
  for (const definition of document.definitions)
    if ('selectionSet' in definition && definition.selectionSet) sets.push(definition.selectionSet);
  while (sets.length && count <= stopAt) {
    const set = sets.pop()!;
    const names = new Map<string, number>();
    namesOf(set, names, new Set(), new Set());
    for (const [name, times] of names) {
      if (times > 1) {
        count += times - 1;
        example ??= name;
      }
    }
    // Nested field scopes, inline fragments looked through.
    const walk = (s: SelectionSetNode) => {
      for (const selection of s.selections) {
        if (selection.kind === Kind.FIELD) {
          if (selection.selectionSet) sets.push(selection.selectionSet);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet);
      }
    };
    walk(set);
  }
  return { count, example };
}

/** The refusal of a document with more repeated fields than `limit` (GRAPHQL_MAX_REPEATED_FIELDS), or undefined. */
export function repeatedFieldsRefusal(document: DocumentNode, limit: number): Error | undefined {
  const { count, example } = repeatedFields(document, limit);
  if (count <= limit) return undefined;
  return validationFailed(
    `The document repeats fields too often: more than ${limit} fields ask again for a name already in their selection set (such as "${example}"). Ask for each field once.`,
  );
}

/** Distinct query texts remembered as checked (and their verdicts), in characters. */
const CHECKED_CHARS = 4 * 1024 * 1024;

/**
 * The check of repeated fields for query texts on their way to Apollo Server, which validates in the same step as
 * it parses (no extension point runs between the two): the text is parsed once here (within the token limit) and
 * its verdict kept by text, so a document seen before costs a lookup. A text that does not parse is left to Apollo,
 * which answers its syntax error.
 */
export function repeatedFieldsPrecheck(limits: Config['graphqlLimits']): (query: string) => Error | undefined {
  const verdicts = new LRUCache<string, { refusal?: string }>({
    maxSize: CHECKED_CHARS,
    sizeCalculation: (_, text) => Math.max(1, text.length),
  });
  return (query) => {
    let verdict = verdicts.get(query);
    if (!verdict) {
      let document: DocumentNode | undefined;
      try {
        document = parse(query, { maxTokens: limits.maxTokens, noLocation: true });
      } catch {
        document = undefined;
      }
      verdict = { refusal: document && repeatedFieldsRefusal(document, limits.maxRepeatedFields)?.message };
      verdicts.set(query, verdict);
    }
    return verdict.refusal === undefined ? undefined : validationFailed(verdict.refusal);
  };
}
