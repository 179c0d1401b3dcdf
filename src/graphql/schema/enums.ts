import { registerEnumType } from 'type-graphql';
import { PET_STATUSES, PLANS, ROLES } from '../../domain/entities/index.js';

const enumOf = <T extends string>(values: readonly T[]) => Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };

/** The same lower-case values as REST (docs/API.md, "GraphQL"), so a status reads the same in both facades. */
export const PetStatusEnum = enumOf(PET_STATUSES);
export const RoleEnum = enumOf(ROLES);
export const PlanEnum = enumOf(PLANS);

registerEnumType(PetStatusEnum, {
  name: 'PetStatus',
  description:
    '`available`: on sale (stock > 0); `pending`: out of stock with open orders, or taken off sale; `sold`: sold out. ' +
    'A pet and its inventory entry always have the same status.',
});
registerEnumType(RoleEnum, { name: 'Role', description: '`staff` runs the store; `customer` buys.' });
registerEnumType(PlanEnum, {
  name: 'Plan',
  description:
    "The account's plan, which sets its rate limits: `free` 60/min and 1000/day, `pro` 300/min and 10000/day, " +
    '`business` 1000/min and 100000/day, `enterprise` per account.',
});
