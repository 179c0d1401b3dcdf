import type { RestDeprecations, RestHandlers } from './router.js';
import { HttpError } from '../http/errors.js';
import { DECIMAL_ID } from '../domain/validate.js';
import * as out from './serialize.js';

export interface PetsRoutesOptions {
  /** When GET /pets/{petId} stops working (docs/API.md, "Versions and deprecation"). */
  sunset: Date;
  /** When it was deprecated, for the `Deprecation` header (RFC 9745). */
  deprecatedSince: Date;
}

const httpDate = (d: Date) => d.toUTCString();

/**
 * Headers of the deprecated GET /pets/{petId} (RFC 9745 Deprecation, RFC 8594 Sunset, successor Link),
 * sent on every answer of the operation, errors included, so a client sees them whatever happens.
 */
export function petsDeprecations({ sunset, deprecatedSince }: PetsRoutesOptions): RestDeprecations {
  // A deprecation can never be announced as starting after the operation is gone.
  const since = Math.min(deprecatedSince.getTime(), sunset.getTime());
  return {
    getPet: (params) => {
      const id = DECIMAL_ID.test(params.petId ?? '') ? params.petId : undefined;
      return {
        Deprecation: `@${Math.floor(since / 1000)}`,
        Sunset: httpDate(sunset),
        Link: `</v1/pets${id ? `?ids=${id}` : ''}>; rel="successor-version"`,
      };
    },
  };
}

export function petsRoutes({ sunset }: Pick<PetsRoutesOptions, 'sunset'>): RestHandlers {
  return {
    listPets: async ({ query }, { domain, url }) => {
      const ids = typeof query.ids === 'string' ? query.ids.split(',').map(Number) : undefined;
      const page = await domain.pets.listPets(
        { status: query.status, categoryId: query.categoryId, name: query.name, ids },
        { limit: query.limit, cursor: query.cursor },
      );
      return out.page(page, url);
    },

    createPet: async ({ body }, { domain, actor }) => {
      const created = await domain.pets.createPet(actor, body);
      return { status: 201, body: created, headers: { Location: `/v1/pets/${created.id}` } };
    },

    getPet: async ({ params }, { domain }) => {
      // The Deprecation/Sunset/Link headers are set by the router on every answer (see `petsDeprecations`).
      if (Date.now() >= sunset.getTime()) {
        const retired = sunset.toISOString().slice(0, 10);
        throw new HttpError('OPERATION_SUNSET', `GET /v1/pets/{petId} was retired on ${retired}; use GET /v1/pets?ids=${params.petId}.`);
      }
      return { body: await domain.pets.getPet(params.petId) };
    },

    updatePet: async ({ params, body }, { domain, actor }) => ({ body: await domain.pets.updatePet(actor, params.petId, body) }),

    deletePet: async ({ params }, { domain, actor }) => {
      await domain.pets.deletePet(actor, params.petId);
      return { status: 204 };
    },
  };
}
