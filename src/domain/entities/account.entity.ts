import { Entity, Enum, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';

export const ROLES = ['staff', 'customer'] as const;
export type Role = (typeof ROLES)[number];
export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const;
export type PlanName = (typeof PLANS)[number];

@Entity({ tableName: 'accounts' })
export class Account {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @Property({ type: 'string', length: 100 })
  name: string;

  @Enum({ items: () => ROLES, type: 'string' })
  role: Role;

  @Enum({ items: () => PLANS, type: 'string' })
  plan: PlanName;

  /** Custom quotas; set only for the enterprise plan. */
  @Property({ type: 'integer', nullable: true })
  perMinute: number | null = null;

  @Property({ type: 'integer', nullable: true })
  perDay: number | null = null;

  /** Custom caps (enterprise only); null: the business plan's. */
  @Property({ type: 'integer', nullable: true })
  webhookEndpointCap: number | null = null;

  @Property({ type: 'integer', nullable: true })
  subscriptionCap: number | null = null;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  constructor(name: string, role: Role, plan: PlanName) {
    this.name = name;
    this.role = role;
    this.plan = plan;
  }
}
