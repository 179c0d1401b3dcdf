import type { RestHandlers } from './router.js';

/** The committed document, served as is; the same for every caller, so any cache may keep it (`PublicCacheControl` in the document). */
export function metaRoutes(openApiYaml: string, openApiJson: unknown): RestHandlers {
  return {
    getOpenApiJson: async () => ({ body: openApiJson, headers: { 'Cache-Control': 'public, max-age=300' } }),
    getOpenApiYaml: async () => ({
      body: openApiYaml,
      headers: { 'Content-Type': 'application/yaml; charset=utf-8', 'Cache-Control': 'public, max-age=300' },
    }),
  };
}
