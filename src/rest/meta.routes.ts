import type { RestHandlers } from './router.js';

/** The committed document (its `x-sunset` following PETS_GET_SUNSET: rest.api.ts); the same for every caller, so any cache may keep it (`PublicCacheControl` in the document). */
export function metaRoutes(openApiYaml: string, openApiJson: unknown): RestHandlers {
  return {
    getOpenApiJson: async () => ({ body: openApiJson, headers: { 'cache-control': 'public, max-age=300' } }),
    getOpenApiYaml: async () => ({
      body: openApiYaml,
      headers: { 'content-type': 'application/yaml; charset=utf-8', 'cache-control': 'public, max-age=300' },
    }),
  };
}
