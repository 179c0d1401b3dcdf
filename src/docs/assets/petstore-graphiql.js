// Starts GraphiQL (global from graphiql.min.js) on this service's GraphQL endpoint, with the headers
// pane open on an X-API-Key to fill in. A key stays in this tab only: GraphiQL keeps its tabs and history (whose
// entries record each run's headers whatever `shouldPersistHeaders` says) in the tab's sessionStorage, not
// localStorage, so closing the tab forgets them.
//
// Queries and mutations go over HTTP (GraphiQL's own fetcher). Subscriptions go over the graphql-ws
// protocol to the same endpoint (graphqlWs, global from graphql-ws.js), on a socket of the page's own
// origin (https → wss), opened for each run with the Headers pane of that run as the connection_init
// payload: {"X-API-Key": "psk_…"} authenticates it, and a key changed between runs is the one used.
// GraphiQL's built-in `subscriptionUrl` would do the same, but its graphql-ws client retries a socket
// the server closed with 4403 (no or an unknown key) five times with growing waits (1 s, 2 s, 4 s, …):
// the refusal reached the result pane only after minutes (125 s in one headless Chromium run). Here
// nothing is retried: any close shows at once, and running again opens a new socket.
(() => {
  var root = document.getElementById('graphiql');
  var endpoint = root.getAttribute('data-endpoint') || '/graphql';
  var url = new URL(endpoint, window.location.href);
  var socketUrl = url.href.replace(/^http/, 'ws');
  var httpFetcher = GraphiQL.createFetcher({ url: url.href });

  /** Whether the operation about to run (named, or the document's only one) is a subscription. */
  function isSubscription(operationName, documentAST) {
    var operations = (documentAST?.definitions || []).filter((d) => d.kind === 'OperationDefinition');
    var operation = operationName
      ? operations.find((d) => d.name && d.name.value === operationName)
      : operations.length === 1 && operations[0];
    return Boolean(operation) && operation.operation === 'subscription';
  }

  /** What the result pane shows for a failed subscription, as `{"errors": [...]}`. */
  function describe(error) {
    // The server's own refusal of the subscribe (a GraphQL error list): as it is.
    if (Array.isArray(error)) return error;
    // The socket closed: a CloseEvent (or any error with a close code).
    if (error && typeof error.code === 'number') {
      let message = `Socket closed with event ${error.code}${error.reason ? ` ${error.reason.replace(/\.$/, '')}` : ''}.`;
      if (error.code === 4403)
        message += ' The X-API-Key is missing or unknown: put {"X-API-Key": "psk_…"} in the Headers pane, then run again.';
      return { message: message, extensions: { closeCode: error.code, closeReason: error.reason || '' } };
    }
    // The socket could not be opened (the browser passes a bare Event and says why in its console).
    if (typeof Event !== 'undefined' && error instanceof Event) {
      return { message: `Could not open a WebSocket to ${socketUrl} (the browser console says why).` };
    }
    return { message: error?.message || `The subscription failed: ${String(error)}` };
  }

  /** One subscription on its own graphql-ws client, as an observable GraphiQL runs and stops. */
  function subscription(params, headers) {
    return {
      subscribe: (observer) => {
        var done = false;
        var client = graphqlWs.createClient({
          url: socketUrl,
          connectionParams: headers || {},
          retryAttempts: 0,
        });
        var finish = () => {
          done = true;
          client.dispose();
        };
        var unsubscribe = client.subscribe(params, {
          next: (result) => {
            if (!done) observer.next(result);
          },
          error: (error) => {
            if (done) return;
            finish();
            observer.error(describe(error));
          },
          complete: () => {
            if (done) return;
            finish();
            observer.complete();
          },
        });
        return {
          unsubscribe: () => {
            if (done) return;
            unsubscribe();
            finish();
          },
        };
      },
    };
  }

  function fetcher(params, options) {
    if (isSubscription(params.operationName, options?.documentAST)) {
      return subscription(params, options?.headers);
    }
    return httpFetcher(params, options);
  }

  var defaultQuery = [
    '# Put your key in the Headers pane below: {"X-API-Key": "psk_…"}, then run (Ctrl-Enter).',
    '# Subscriptions run here too, e.g. subscription { inventoryChanged { petId quantity status } }',
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
      storage: window.sessionStorage,
    }),
  );
})();
