import { ApolloArmor } from '@escape.tech/graphql-armor';
import { GraphQLError, type ParseOptions, type ValidationContext, type ValidationRule } from 'graphql';
import type { Config } from '../../config.js';

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
  return { parseOptions: { maxTokens: limits.maxTokens }, validationRules: armor.validationRules };
}
