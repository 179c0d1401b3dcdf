import { BaseSqlitePlatform, type EntityManager } from '@mikro-orm/knex';
import { Account, ApiKey, PLANS, ROLES, type PlanName, type Role } from './entities/index.js';
import type { FilterQuery } from '@mikro-orm/core';
import { DomainError, forbidden, notFound, validationFailed } from './errors.js';
import { isStaff, type Actor } from './actor.js';
import { ENTERPRISE_BOUNDS, customLimits, limitsFor, type CustomLimits } from './plans.js';
import { banLasts, generateApiKey, hashApiKey, SHOWN_PREFIX_LENGTH } from './api-keys.js';
import { findPage, type Page, type PageRequest } from './pagination.js';
import * as v from './validate.js';
import type { AccountView, ApiKeyView, NewApiKeyView } from './views.js';

/** The rate limiter's copy of bans (in its store); the key's `bannedUntil` column is the durable record. */
export interface BanRegistry {
  bannedUntil(keyId: number): Promise<Date | null>;
  lift(keyId: number): Promise<void>;
}

/** What the accounts service tells or asks outside the domain. */
export interface AccountsDeps {
  bans?: BanRegistry;
  /**
   * Called after a change that alters what a key authenticates as (an account's role or plan, a
   * revoked key), once it is committed: caches of authentications must forget.
   */
  onAccountsChanged?: () => void;
}

/** An account to create, or changes to one; typed for the facades' input types, checked by the service. */
export interface AccountInput {
  name?: string;
  role?: Role;
  plan?: PlanName;
  limits?: { perMinute: number; perDay: number; webhookEndpoints?: number | null; subscriptions?: number | null } | null;
}

export const toAccountView = (a: Account): AccountView => ({
  id: a.id,
  name: a.name,
  role: a.role,
  plan: a.plan,
  limits: limitsFor(a.plan, customLimits(a)),
  createdAt: a.createdAt,
});

function setCustomLimits(a: Account, limits: CustomLimits | null): void {
  a.perMinute = limits?.perMinute ?? null;
  a.perDay = limits?.perDay ?? null;
  a.webhookEndpointCap = limits?.webhookEndpoints ?? null;
  a.subscriptionCap = limits?.subscriptions ?? null;
}

/** The key's ban while it lasts (an expired one reads as none). */
const activeBan = (k: ApiKey, now = Date.now()): Date | null => (banLasts(k.bannedUntil?.getTime(), now) ? k.bannedUntil : null);

const toKeyView = (k: ApiKey): ApiKeyView => ({
  id: k.id,
  accountId: k.account.id,
  prefix: k.prefix,
  createdAt: k.createdAt,
  revokedAt: k.revokedAt,
  bannedUntil: activeBan(k),
});

const lastStaffKey = (message: string) => new DomainError('LAST_STAFF_KEY', message);
/** Whether an unrevoked key of a staff account exists besides the one(s) `except` leaves out (a staff key always remains: docs/API.md). */
async function otherStaffKeyExists(em: EntityManager, except: FilterQuery<ApiKey>): Promise<boolean> {
  return (await em.count(ApiKey, { $and: [{ revokedAt: null, account: { role: 'staff' } }, except] })) > 0;
}

/** The PostgreSQL advisory lock every change that could remove the last staff key takes (an arbitrary constant). */
const STAFF_CHANGE_LOCK = 4_207_151;

function requireStaff(actor: Actor) {
  if (!isStaff(actor)) throw forbidden('Only staff can manage accounts and keys.');
}

export class AccountsService {
  private readonly bans?: BanRegistry;
  private readonly changed: () => void;

  constructor(
    private readonly em: EntityManager,
    deps: AccountsDeps = {},
  ) {
    this.bans = deps.bans;
    this.changed = deps.onAccountsChanged ?? (() => {});
  }

  /**
   * The hashes of every unrevoked key (or of those created since `createdSince`): the index that lets an
   * address over the failed-authentication limit still use its valid keys.
   */
  async activeKeyHashes(createdSince?: Date): Promise<string[]> {
    const where = createdSince ? { revokedAt: null, createdAt: { $gte: createdSince } } : { revokedAt: null };
    const rows = await this.em.createQueryBuilder(ApiKey).select('hash').where(where).execute('all', false);
    return (rows as Array<{ hash: string }>).map((r) => r.hash);
  }

  async viewer(actor: Actor): Promise<AccountView & { apiKey: ApiKeyView }> {
    const key = await this.em.findOne(ApiKey, { id: actor.keyId }, { populate: ['account'] });
    if (!key) throw notFound('API key', actor.keyId);
    return { ...toAccountView(key.account), apiKey: toKeyView(key) };
  }

  /** One account, for staff or the account itself (anyone else: NOT_FOUND, as if it did not exist). */
  async getAccount(actor: Actor, accountId: number): Promise<AccountView> {
    const id = v.id(accountId, 'id');
    const account = isStaff(actor) || actor.accountId === id ? await this.em.findOne(Account, { id }) : null;
    if (!account) throw notFound('Account', id);
    return toAccountView(account);
  }

  /** One key without its secret, for staff or the key itself (anyone else: NOT_FOUND). */
  async getApiKey(actor: Actor, keyId: number): Promise<ApiKeyView> {
    const id = v.id(keyId, 'id');
    const key = isStaff(actor) || actor.keyId === id ? await this.em.findOne(ApiKey, { id }) : null;
    if (!key) throw notFound('API key', id);
    return toKeyView(key);
  }

  async listAccounts(actor: Actor, page: PageRequest): Promise<Page<AccountView>> {
    requireStaff(actor);
    return findPage(this.em, Account, {}, page, toAccountView);
  }

  async createAccount(actor: Actor, input: AccountInput): Promise<AccountView & { apiKey: NewApiKeyView }> {
    requireStaff(actor);
    const name = v.nameText(input.name, 'name');
    const role = v.oneOf(input.role, 'role', ROLES);
    const plan = v.oneOf(input.plan, 'plan', PLANS);
    const limits = this.limitsForPlan(plan, input.limits, null);
    return this.em.transactional(async (em) => {
      const account = new Account(name, role, plan);
      setCustomLimits(account, limits);
      em.persist(account);
      const apiKey = this.newKey(em, account);
      await em.flush();
      return { ...toAccountView(account), apiKey: { ...toKeyView(apiKey.entity), key: apiKey.key } };
    });
  }

  async updateAccount(actor: Actor, id: number, input: AccountInput): Promise<AccountView> {
    requireStaff(actor);
    const accountId = v.id(id, 'accountId');
    const account = await this.em.findOne(Account, { id: accountId });
    if (!account) throw notFound('Account', accountId);
    if (input.name === undefined && input.role === undefined && input.plan === undefined && input.limits === undefined) {
      throw validationFailed('Nothing to update: give name, role, plan or limits.');
    }
    const name = input.name === undefined ? account.name : v.nameText(input.name, 'name');
    const role = input.role === undefined ? account.role : v.oneOf(input.role, 'role', ROLES);
    const plan = input.plan === undefined ? account.plan : v.oneOf(input.plan, 'plan', PLANS);
    const limits = this.limitsForPlan(plan, input.limits, customLimits(account));
    if (account.role === 'staff' && role !== 'staff') {
      const demoted = await this.staffChange(async (em) => {
        const current = await em.findOneOrFail(Account, { id: accountId }, { refresh: true });
        if (current.role === 'staff' && !(await otherStaffKeyExists(em, { account: { $ne: accountId } }))) {
          throw lastStaffKey(
            'This is the last staff account with an active key: demoting it would leave no one to manage accounts. Give another account the staff role first.',
          );
        }
        Object.assign(current, { name, role, plan });
        setCustomLimits(current, limits);
        return current;
      });
      this.changed();
      return toAccountView(demoted);
    }
    account.name = name;
    account.role = role;
    account.plan = plan;
    setCustomLimits(account, limits);
    await this.em.flush();
    this.changed();
    return toAccountView(account);
  }

  /**
   * `limits` only (and required) for enterprise (docs/API.md). Leaving enterprise drops them. The caps
   * (`webhookEndpoints`, `subscriptions`) are optional: one left out keeps the account's current
   * value, and an account that never had one gets the business plan's; `null` returns it to that.
   */
  private limitsForPlan(plan: PlanName, given: AccountInput['limits'], current: CustomLimits | null): CustomLimits | null {
    if (plan !== 'enterprise') {
      if (given !== undefined && given !== null) {
        throw validationFailed('limits can only be set on the enterprise plan.', [{ path: 'limits', message: 'only for plan enterprise' }]);
      }
      return null;
    }
    if (given === undefined || given === null) {
      if (current) return current;
      throw validationFailed('The enterprise plan needs limits: {perMinute, perDay}.', [
        { path: 'limits', message: 'required for plan enterprise' },
      ]);
    }
    // perDay below perMinute is allowed: the day window then binds first (a trial account, say).
    const cap = (value: number | null | undefined, field: 'webhookEndpoints' | 'subscriptions', max: number) =>
      value === undefined ? (current?.[field] ?? null) : value === null ? null : v.intInRange(value, `limits.${field}`, 0, max);
    return {
      perMinute: v.intInRange(given.perMinute, 'limits.perMinute', 1, ENTERPRISE_BOUNDS.perMinute),
      perDay: v.intInRange(given.perDay, 'limits.perDay', 1, ENTERPRISE_BOUNDS.perDay),
      webhookEndpoints: cap(given.webhookEndpoints, 'webhookEndpoints', ENTERPRISE_BOUNDS.webhookEndpoints),
      subscriptions: cap(given.subscriptions, 'subscriptions', ENTERPRISE_BOUNDS.subscriptions),
    };
  }

  /** Every key of an account, revoked ones included, oldest first, with any active ban. */
  async listApiKeys(actor: Actor, accountId: number): Promise<ApiKeyView[]> {
    requireStaff(actor);
    const id = v.id(accountId, 'accountId');
    if (!(await this.em.count(Account, { id }))) throw notFound('Account', id);
    const keys = await this.em.find(ApiKey, { account: id }, { orderBy: { id: 'asc' } });
    return keys.map(toKeyView);
  }

  async createApiKey(actor: Actor, accountId: number): Promise<NewApiKeyView> {
    requireStaff(actor);
    const account = await this.em.findOne(Account, { id: v.id(accountId, 'accountId') });
    if (!account) throw notFound('Account', accountId);
    const { entity, key } = this.newKey(this.em, account);
    await this.em.flush();
    return { ...toKeyView(entity), key };
  }

  /**
   * A new key for a staff account: `accountId`, else the oldest staff account, else a new "Administrator"
   * staff account (plan business). Nothing else changes, so a lost staff key never costs the data.
   */
  async issueStaffKey(actor: Actor, accountId?: number): Promise<NewApiKeyView & { account: AccountView }> {
    requireStaff(actor);
    const where = accountId === undefined ? { role: 'staff' as const } : { id: v.id(accountId, 'accountId') };
    let account = await this.em.findOne(Account, where, { orderBy: { id: 'asc' } });
    if (accountId !== undefined && !account) throw notFound('Account', accountId);
    if (account && account.role !== 'staff') {
      throw validationFailed(`Account ${account.id} is a ${account.role} account; a staff key needs a staff account.`);
    }
    if (!account) {
      account = new Account('Administrator', 'staff', 'business');
      this.em.persist(account);
    }
    const { entity, key } = this.newKey(this.em, account);
    await this.em.flush();
    return { ...toKeyView(entity), key, account: toAccountView(account) };
  }

  async revokeApiKey(actor: Actor, keyId: number): Promise<ApiKeyView> {
    requireStaff(actor);
    const id = v.id(keyId, 'keyId');
    const key = await this.em.findOne(ApiKey, { id }, { populate: ['account'] });
    if (!key) throw notFound('API key', keyId);
    if (!key.revokedAt && key.account.role === 'staff') {
      const revoked = await this.staffChange(async (em) => {
        const current = await em.findOneOrFail(ApiKey, { id }, { populate: ['account'], refresh: true });
        if (!current.revokedAt && current.account.role === 'staff' && !(await otherStaffKeyExists(em, { id: { $ne: id } }))) {
          throw lastStaffKey(
            'This is the last active key of a staff account: revoking it would leave no one to manage accounts. Create another staff key first.',
          );
        }
        current.revokedAt ??= new Date();
        return current;
      });
      this.changed();
      return toKeyView(revoked);
    }
    key.revokedAt ??= new Date();
    await this.em.flush();
    this.changed();
    return toKeyView(key);
  }

  /**
   * A change that could remove the last staff key, checked and written in one transaction that no other such change
   * runs beside: two staff revoking each other's last keys at once would each see the other's key remain. On
   * PostgreSQL they take one advisory lock; SQLite's transactions already take the write lock up front.
   */
  private staffChange<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    return this.em.transactional(async (em) => {
      if (!(em.getPlatform() instanceof BaseSqlitePlatform)) await em.execute('select pg_advisory_xact_lock(?)', [STAFF_CHANGE_LOCK]);
      return work(em);
    });
  }

  async liftBan(actor: Actor, keyId: number): Promise<void> {
    requireStaff(actor);
    const key = await this.em.findOne(ApiKey, { id: v.id(keyId, 'keyId') });
    if (!key) throw notFound('API key', keyId);
    key.bannedUntil = null;
    await this.em.flush();
    await this.bans?.lift(key.id);
    this.changed();
  }

  /** Records a ban on the key (the rate limiter calls this when it bans): it outlives the limiter's store. */
  async recordBan(keyId: number, until: Date): Promise<void> {
    await this.em.nativeUpdate(ApiKey, { id: keyId }, { bannedUntil: until });
  }

  private newKey(em: EntityManager, account: Account, key = generateApiKey()) {
    const entity = new ApiKey(account, key.slice(0, SHOWN_PREFIX_LENGTH), hashApiKey(key));
    em.persist(entity);
    return { entity, key };
  }

  /**
   * First start on an empty database: a staff account (plan business) with `adminKey` or a new key.
   * Returns the key to print once, or null when accounts already exist.
   */
  async bootstrapAdmin(adminKey: string | undefined): Promise<string | null> {
    if ((await this.em.count(Account, {})) > 0) return null;
    const account = new Account('Administrator', 'staff', 'business');
    this.em.persist(account);
    const { key } = this.newKey(this.em, account, adminKey);
    await this.em.flush();
    return key;
  }

  /** A demo customer on the free plan, for the walkthrough. Returns its key. */
  async createDemoCustomer(): Promise<string> {
    const account = new Account('Demo customer', 'customer', 'free');
    this.em.persist(account);
    const { key } = this.newKey(this.em, account);
    await this.em.flush();
    return key;
  }
}
