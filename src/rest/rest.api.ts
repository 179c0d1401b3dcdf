import type { Middleware } from 'koa';
import type { Config } from '../config.js';
import type { RateLimitGate } from '../rate-limit/index.js';
import { loadOpenApiText, openApiDocumentFor } from './openapi.js';
import { createRestRouter } from './router.js';
import { restGuard } from './guard.js';
import { petsDeprecations, petsRoutes } from './pets.routes.js';
import { categoriesRoutes } from './categories.routes.js';
import { storeRoutes } from './store.routes.js';
import { accountsRoutes } from './accounts.routes.js';
import { metaRoutes } from './meta.routes.js';
import { eventsRoutes } from './events.routes.js';

/** When GET /pets/{petId} was deprecated (the `Deprecation` header). */
const GET_PET_DEPRECATED_SINCE = new Date('2026-11-01T00:00:00Z');

/**
 * The REST facade under /v1: the router generated from `schema/openapi.yaml`, every handler, and the
 * guard (authentication outcome and rate limit) in front of each.
 */
export function restApi({ config, gate }: { config: Pick<Config, 'petsGetSunset'>; gate: RateLimitGate }): Middleware {
  const openApiText = loadOpenApiText();
  const openApiDoc = openApiDocumentFor(openApiText);
  return createRestRouter(
    openApiDoc,
    {
      ...petsRoutes({ sunset: config.petsGetSunset }),
      ...categoriesRoutes(),
      ...storeRoutes(),
      ...accountsRoutes({ gate }),
      ...metaRoutes(openApiText, openApiDoc),
      ...eventsRoutes(),
    },
    restGuard(gate),
    petsDeprecations({ sunset: config.petsGetSunset, deprecatedSince: GET_PET_DEPRECATED_SINCE }),
  );
}
