import { DirectiveLocation, GraphQLDirective, GraphQLEnumType, GraphQLNonNull } from 'graphql';

const StabilityLevel = new GraphQLEnumType({
  name: 'StabilityLevel',
  description: 'How settled a field is. Fields without `@stability` are stable.',
  values: {
    EXPERIMENTAL: { description: 'May change or go away without notice; do not build on it yet.' },
    BETA: { description: 'Complete and supported, but its shape may still change in a minor version.' },
  },
});

/** `@stability(level:)`: the GraphQL twin of the OpenAPI `x-stability` mark (docs/API.md, "Versions and deprecation"). */
export const stabilityDirective = new GraphQLDirective({
  name: 'stability',
  description: 'Marks a field that is not yet stable (the `x-stability` of the REST operation).',
  locations: [DirectiveLocation.FIELD_DEFINITION],
  args: { level: { type: new GraphQLNonNull(StabilityLevel) } },
});

export const EXPERIMENTAL = '@stability(level: EXPERIMENTAL)';
export const BETA = '@stability(level: BETA)';
