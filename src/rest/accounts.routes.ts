import type { RestHandlers } from './router.js';
import type { RateLimitGate } from '../rate-limit/gate.js';
import * as out from './serialize.js';

export interface AccountsRoutesOptions {
  gate: Pick<RateLimitGate, 'status'>;
}

export function accountsRoutes({ gate }: AccountsRoutesOptions): RestHandlers {
  return {
    getViewer: async (_input, { domain, actor }) => {
      const viewer = await domain.accounts.viewer(actor);
      return { body: { ...out.account(viewer), apiKey: out.apiKey(viewer.apiKey) } };
    },

    getRateLimit: async (_input, { actor }) => ({ body: out.rateLimit(await gate.status(actor)) }),

    createAccount: async ({ body }, { domain, actor }) => {
      const created = await domain.accounts.createAccount(actor, body);
      return {
        status: 201,
        body: { ...out.account(created), apiKey: out.newApiKey(created.apiKey) },
        headers: { Location: `/v1/accounts/${created.id}` },
      };
    },

    listAccounts: async ({ query }, { domain, actor, url }) =>
      out.page(await domain.accounts.listAccounts(actor, { limit: query.limit, cursor: query.cursor }), url, out.account),

    updateAccount: async ({ params, body }, { domain, actor }) => ({
      body: out.account(await domain.accounts.updateAccount(actor, params.accountId, body)),
    }),

    listApiKeys: async ({ params }, { domain, actor }) => ({
      body: (await domain.accounts.listApiKeys(actor, params.accountId)).map(out.apiKey),
    }),

    createApiKey: async ({ params }, { domain, actor }) => ({
      status: 201,
      body: out.newApiKey(await domain.accounts.createApiKey(actor, params.accountId)),
    }),

    revokeApiKey: async ({ params }, { domain, actor }) => {
      await domain.accounts.revokeApiKey(actor, params.keyId);
      return { status: 204 };
    },

    liftBan: async ({ params }, { domain, actor }) => {
      await domain.accounts.liftBan(actor, params.keyId);
      return { status: 204 };
    },
  };
}
