/**
 * `GET /graphiql`: a GraphQL explorer that works without internet (Apollo Sandbox at `GET /graphql` loads
 * from Apollo's CDN). GraphiQL 3 ships a ready UMD build that needs only React 18's UMD builds, so the
 * three npm packages' files are served from here as `/docs` serves Swagger UI's: no CDN, no bundler.
 * Subscriptions run over graphql-ws's own browser build (the package the server uses), on a socket to the
 * page's origin: `connect-src 'self'` of the page's policy admits it (src/docs/assets/petstore-graphiql.js).
 * Outside production only, like the Sandbox. Public: no key, not rate limited (queries need a key).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Middleware } from 'koa';
import { projectPath } from '../project-path.js';
import { escapeHtml, pageWithAssets, type Asset } from './docs.routes.js';

const packageDir = (name: string) => dirname(createRequire(import.meta.url).resolve(`${name}/package.json`));
const script = 'text/javascript; charset=utf-8';
/** graphql-ws exports no package.json: its directory is the one above its entry point (dist/). */
const graphqlWsDir = () => dirname(dirname(createRequire(import.meta.url).resolve('graphql-ws')));

/** Koa middleware answering `/graphiql` and `/graphiql/assets/*`; passes everything else on. */
export function graphiqlRoutes(options: { endpoint?: string } = {}): Middleware {
  const endpoint = options.endpoint ?? '/graphql';
  const assets: Record<string, Asset> = {
    'react.production.min.js': { file: join(packageDir('react'), 'umd', 'react.production.min.js'), type: script },
    'react-dom.production.min.js': { file: join(packageDir('react-dom'), 'umd', 'react-dom.production.min.js'), type: script },
    'graphiql.min.js': { file: join(packageDir('graphiql'), 'graphiql.min.js'), type: script },
    'graphiql.min.css': { file: join(packageDir('graphiql'), 'graphiql.min.css'), type: 'text/css; charset=utf-8' },
    'graphql-ws.js': { file: join(graphqlWsDir(), 'umd', 'graphql-ws.js'), type: script },
    'petstore-graphiql.js': { file: projectPath('src/docs/assets/petstore-graphiql.js'), type: script },
  };
  const page = Buffer.from(renderPage(endpoint));

  return pageWithAssets('/graphiql', 'the explorer', page, assets);
}

function renderPage(endpoint: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Petstore GraphQL explorer</title>
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/graphiql/assets/graphiql.min.css">
  <style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
  <div id="graphiql" data-endpoint="${escapeHtml(endpoint)}">Loading the GraphQL explorer…</div>
  <noscript>The explorer needs JavaScript. The API reference is at <a href="/docs">/docs</a>.</noscript>
  <script src="/graphiql/assets/react.production.min.js"></script>
  <script src="/graphiql/assets/react-dom.production.min.js"></script>
  <script src="/graphiql/assets/graphiql.min.js"></script>
  <script src="/graphiql/assets/graphql-ws.js"></script>
  <script src="/graphiql/assets/petstore-graphiql.js"></script>
</body>
</html>
`;
}
