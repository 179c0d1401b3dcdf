import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import {
  ApolloServerPluginLandingPageLocalDefault,
  ApolloServerPluginLandingPageProductionDefault,
} from '@apollo/server/plugin/landingPage/default';

/** Where the explorer that needs no internet is served (src/docs/graphiql.routes.ts), outside production. */
export const OFFLINE_EXPLORER_PATH = '/graphiql';

/**
 * What a browser sees at `GET /graphql`: Apollo's landing page, by Apollo's own landing-page plugins in the
 * server's plugin list. Outside production, the embedded Apollo Sandbox, which loads from Apollo's CDN; without
 * internet Apollo's page only says the Sandbox "cannot be loaded", so the page also leads to the local explorer
 * at /graphiql (a link in Apollo's own fallback notice, and the Sandbox's empty frame hidden so that the link can
 * be clicked): a plugin that delegates to Apollo's and adds the link to the page it renders. In production,
 * Apollo's notice, without footer.
 */
export function landingPage(production: boolean): ApolloServerPlugin<BaseContext> {
  if (production) return ApolloServerPluginLandingPageProductionDefault({ footer: false });
  const sandbox = ApolloServerPluginLandingPageLocalDefault({
    embed: {
      initialState: { sharedHeaders: { 'X-API-Key': '' }, pollForSchemaUpdates: false },
      endpointIsEditable: false,
      // No usage telemetry from the developer's browser to Apollo.
      runTelemetry: false,
    },
    footer: false,
    includeCookies: false,
  });
  return {
    async serverWillStart(service) {
      const listener = await sandbox.serverWillStart?.(service);
      const render = listener?.renderLandingPage;
      if (!render) return listener;
      return {
        ...listener,
        async renderLandingPage() {
          const { html } = await render();
          return { html: async () => withOfflineExplorer(typeof html === 'string' ? html : await html()) };
        },
      };
    },
  };
}

/**
 * Apollo's Sandbox page with a link to the offline explorer in its fallback notice (shown when the Sandbox does
 * not load). The page's policy admits only styles with its nonce: the added style carries the same one.
 */
function withOfflineExplorer(html: string): string {
  const nonce = /nonce=["']?([0-9a-f]+)/.exec(html)?.[1];
  const link = `<p id="offline-explorer">Without internet, explore the API with GraphiQL, served by this service: <a href="${OFFLINE_EXPLORER_PATH}">${OFFLINE_EXPLORER_PATH}</a>.</p>`;
  // The Sandbox's frame holder covers the page; empty (the Sandbox did not load), it must not hide the link.
  const style = nonce ? `<style nonce="${nonce}">#embeddableSandbox:empty { display: none; }</style>` : '';
  const fallback = /(<div class="fallback">[\s\S]*?)(<\/div>)/;
  return fallback.test(html) ? html.replace(fallback, `$1${link}${style}$2`) : html.replace('<body>', `<body>${link}${style}`);
}
