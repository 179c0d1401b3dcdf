// Starts Swagger UI on /docs with the plugin that makes it honour this document's extensions.
// Plain browser JavaScript (no build step), served from /docs/assets/ next to swagger-ui-dist's files,
// so the page needs no inline script and works under a strict Content-Security-Policy.
/* global SwaggerUIBundle */
(() => {
  'use strict';

  var STABILITY_LABELS = { beta: 'Beta', experimental: 'Experimental' };
  var STABILITY_HINTS = {
    beta: 'Beta: complete and supported, but its shape may still change before it is declared stable.',
    experimental: 'Experimental: may change or disappear without a deprecation period.',
  };

  /**
   * Swagger UI honours `deprecated` (struck-through path, "Warning: Deprecated") but knows nothing of
   * `x-sunset`, `x-stability` or `x-hideTryItPanel`; this plugin adds them:
   * - a "Deprecated · sunset DATE" badge and a stability badge next to the path of each operation;
   * - per-operation try-it: Swagger UI asks the `allowTryItOutFor(path, method)` spec selector before it
   *   renders "Try it out"; we answer false where the operation (or the document) sets `x-hideTryItPanel`.
   *   (`supportedSubmitMethods` can only switch whole HTTP methods off, not single operations.)
   */
  function PetstoreExtensionsPlugin(system) {
    var h = system.React.createElement;

    function operationJson(path, method) {
      return system.specSelectors.specJson().getIn(['paths', path, method]);
    }

    function tryItHidden(path, method) {
      var op = operationJson(path, method);
      var root = system.specSelectors.specJson().get('x-hideTryItPanel');
      var own = op?.get('x-hideTryItPanel');
      return own === true || (own === undefined && root === true);
    }

    function badges(op) {
      var out = [];
      if (!op) return out;
      if (op.get('deprecated') === true) {
        const sunset = op.get('x-sunset');
        out.push(
          h(
            'span',
            {
              key: 'deprecated',
              className: 'petstore-badge petstore-badge--deprecated',
              'data-badge': 'deprecated',
              title: sunset ? `Deprecated: stops working on ${sunset} (answers 410 after that).` : 'Deprecated.',
            },
            sunset ? `Deprecated · sunset ${sunset}` : 'Deprecated',
          ),
        );
      }
      var stability = op.get('x-stability');
      if (typeof stability === 'string') {
        out.push(
          h(
            'span',
            {
              key: 'stability',
              className: `petstore-badge petstore-badge--${stability}`,
              'data-badge': 'stability',
              'data-stability': stability,
              title: STABILITY_HINTS[stability] || stability,
            },
            STABILITY_LABELS[stability] || stability,
          ),
        );
      }
      if (op.get('x-hideTryItPanel') === true) {
        out.push(
          h(
            'span',
            {
              key: 'no-try',
              className: 'petstore-badge petstore-badge--no-try',
              'data-badge': 'no-try-it',
              title: 'Try it out is turned off for this operation.',
            },
            'No try-it',
          ),
        );
      }
      return out;
    }

    return {
      statePlugins: {
        spec: {
          wrapSelectors: {
            allowTryItOutFor: (original) => (state, path, method) => original(state, path, method) && !tryItHidden(path, method),
          },
        },
      },
      wrapComponents: {
        OperationSummaryPath: (Original) => (props) => {
          // The raw operation from the document: `op` in operationProps may be a resolved copy or absent.
          var op = operationJson(props.operationProps.get('path'), props.operationProps.get('method'));
          return h('span', { className: 'petstore-summary-path' }, h(Original, props), badges(op));
        },
        parameters: (Original) => (props) => {
          var pathMethod = props.pathMethod || [];
          if (!tryItHidden(pathMethod[0], pathMethod[1])) return h(Original, props);
          return h(
            'div',
            null,
            h(
              'p',
              { className: 'petstore-tryit-note', 'data-note': 'no-try-it' },
              'Try it out is turned off for this operation. Call it from your own client with your API key in X-API-Key.',
            ),
            h(Original, props),
          );
        },
      },
    };
  }

  window.addEventListener('DOMContentLoaded', () => {
    var root = document.getElementById('swagger-ui');
    window.ui = SwaggerUIBundle({
      url: root.getAttribute('data-spec-url'),
      domNode: root,
      deepLinking: true,
      docExpansion: 'list',
      defaultModelsExpandDepth: 0,
      displayRequestDuration: true,
      filter: true,
      persistAuthorization: false,
      showExtensions: true,
      validatorUrl: null,
      presets: [SwaggerUIBundle.presets.apis],
      plugins: [PetstoreExtensionsPlugin],
      layout: 'BaseLayout',
    });
  });
})();
