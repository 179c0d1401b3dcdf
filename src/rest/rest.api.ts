import type { Middleware } from 'koa';
import type { Config } from '../config.js';
import type { RateLimitGate } from '../rate-limit/index.js';
import { loadOpenApiText, openApiDocumentFor, type OpenApiDocument } from './openapi.js';
import { createRestRouter } from './router.js';
import { restGuard } from './guard.js';
import { petsDeprecations, petsRoutes } from './pets.routes.js';
import { categoriesRoutes } from './categories.routes.js';
import { storeRoutes } from './store.routes.js';
import { accountsRoutes } from './accounts.routes.js';
import { metaRoutes } from './meta.routes.js';
import { eventsRoutes } from './events.routes.js';

/** The deprecated operation's path in the document. */
const PET_BY_ID = '/pets/{petId}';
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
      ...metaRoutes(...withSunset(openApiText, openApiDoc, config.petsGetSunset)),
      ...eventsRoutes(),
    },
    restGuard(gate),
    petsDeprecations({ sunset: config.petsGetSunset, deprecatedSince: GET_PET_DEPRECATED_SINCE }),
  );
}

/**
 * The published document (YAML and JSON) with the configured sunset of `GET /pets/{petId}` as its `x-sunset`, which
 * clients and `/docs` read: the committed file holds the default. The router and validator keep the file's document.
 */
function withSunset(text: string, doc: OpenApiDocument, sunset: Date): [string, OpenApiDocument] {
  const day = sunset.toISOString().slice(0, 10);
  const operations = doc.paths[PET_BY_ID]!;
  const served = { ...doc, paths: { ...doc.paths, [PET_BY_ID]: { ...operations, get: { ...operations.get!, 'x-sunset': day } } } };
  const yaml = text.replace(/^(\s+x-sunset: )'\d{4}-\d{2}-\d{2}'$/m, `$1'${day}'`);
  return [yaml, served];
}
