import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { ApolloServerPlugin } from '@apollo/server';
import type { ParseOptions, ValidationRule } from 'graphql';
import type { Config } from '../config.js';

/**
 * Limits on the shape of a GraphQL document (OWASP GraphQL cheat sheet), enforced before anything
 * executes or is charged: tokens while parsing (graphql-js's own `maxTokens`, so an oversized document
 * is never fully parsed), then depth, aliases, directives and cost as validation rules
 * (GraphQL Armor). A refusal is a 400 VALIDATION_FAILED naming the limit. Field suggestions
 * ("Did you mean …") are masked by Armor and, in production, by Apollo.
 */
export function queryLimits(limits: Config['graphqlLimits']): {
  parseOptions: ParseOptions;
  validationRules: ValidationRule[];
  plugins: ApolloServerPlugin[];
} {
  const armor = new ApolloArmor({
    maxTokens: { enabled: false },
    maxDepth: { n: limits.maxDepth, ignoreIntrospection: true },
    maxAliases: { n: limits.maxAliases },
    maxDirectives: { n: 50 },
    costLimit: { maxCost: limits.maxCost, ignoreIntrospection: true },
    blockFieldSuggestion: { enabled: true },
  }).protect();
  // Armor is typed against Apollo's CommonJS build and this service imports the ESM one: the same plugin type.
  return { parseOptions: { maxTokens: limits.maxTokens }, validationRules: armor.validationRules, plugins: armor.plugins as unknown as ApolloServerPlugin[] };
}
