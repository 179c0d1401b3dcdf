// Starts GraphiQL (global from graphiql.min.js) on this service's GraphQL endpoint, with the headers
// pane open on an X-API-Key to fill in. Headers are not persisted: a key stays in this tab only.
(function () {
  var root = document.getElementById('graphiql');
  var endpoint = root.getAttribute('data-endpoint') || '/graphql';
  var fetcher = GraphiQL.createFetcher({ url: new URL(endpoint, window.location.href).href });
  var defaultQuery = [
    '# Put your key in the Headers pane below: {"X-API-Key": "psk_…"}, then run (Ctrl-Enter).',
    'query FindPets {',
    '  pets(first: 5) {',
    '    edges { node { id name status category { name } inventory { quantity } } }',
    '  }',
    '  rateLimit { plan resources { minute { limit remaining } } }',
    '}',
    '',
  ].join('\n');
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: defaultQuery,
      defaultHeaders: JSON.stringify({ 'X-API-Key': '' }, null, 2),
      defaultEditorToolsVisibility: 'headers',
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
    }),
  );
})();
