import type { RestHandlers } from './router.js';
import * as out from './serialize.js';

export function categoriesRoutes(): RestHandlers {
  return {
    listCategories: async ({ query }, { domain, url }) =>
      out.page(await domain.categories.listCategories({ limit: query.limit, cursor: query.cursor }), url, out.category),

    createCategory: async ({ body }, { domain, actor }) => {
      const created = await domain.categories.createCategory(actor, body);
      return { status: 201, body: out.category(created), headers: { Location: `/v1/categories/${created.id}` } };
    },

    getCategory: async ({ params }, { domain }) => ({ body: out.category(await domain.categories.getCategory(params.categoryId)) }),

    updateCategory: async ({ params, body }, { domain, actor }) => ({
      body: out.category(await domain.categories.updateCategory(actor, params.categoryId, body)),
    }),

    deleteCategory: async ({ params }, { domain, actor }) => {
      await domain.categories.deleteCategory(actor, params.categoryId);
      return { status: 204 };
    },
  };
}
