import type { RestHandlers } from './router.js';
import { EdgeError } from '../http/errors.js';
import * as out from './serialize.js';

export interface PetsRoutesOptions {
  /** When GET /pets/{petId} stops working (SPEC §3). */
  sunset: Date;
  /** When it was deprecated, for the `Deprecation` header (RFC 9745). */
  deprecatedSince: Date;
}

const httpDate = (d: Date) => d.toUTCString();

export function petsRoutes({ sunset, deprecatedSince }: PetsRoutesOptions): RestHandlers {
  return {
    listPets: async ({ query }, { domain, url }) => {
      const ids = typeof query.ids === 'string' ? query.ids.split(',').map(Number) : undefined;
      const result = await domain.catalog.listPets(
        { status: query.status, categoryId: query.categoryId, name: query.name, ids },
        { limit: query.limit, cursor: query.cursor },
      );
      return out.page(result, out.pet, url);
    },

    createPet: async ({ body }, { domain, actor }) => {
      const created = await domain.catalog.createPet(actor, body);
      return { status: 201, body: out.pet(created), headers: { Location: `/v1/pets/${created.id}` } };
    },

    getPet: async ({ params }, { domain }) => {
      const headers = {
        Deprecation: `@${Math.floor(deprecatedSince.getTime() / 1000)}`,
        Sunset: httpDate(sunset),
        Link: `</v1/pets?ids=${params.petId}>; rel="successor-version"`,
      };
      if (Date.now() >= sunset.getTime()) {
        const retired = sunset.toISOString().slice(0, 10);
        throw new EdgeError('OPERATION_SUNSET', `GET /v1/pets/{petId} was retired on ${retired}; use GET /v1/pets?ids=${params.petId}.`, headers);
      }
      return { body: out.pet(await domain.catalog.getPet(params.petId)), headers };
    },

    updatePet: async ({ params, body }, { domain, actor }) => ({ body: out.pet(await domain.catalog.updatePet(actor, params.petId, body)) }),

    deletePet: async ({ params }, { domain, actor }) => {
      await domain.catalog.deletePet(actor, params.petId);
      return { status: 204 };
    },
  };
}
