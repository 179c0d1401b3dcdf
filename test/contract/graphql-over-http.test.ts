import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serverAudits } from 'graphql-http';
import { startApp, type TestApp } from '../helpers/app.js';

/**
 * The GraphQL-over-HTTP conformance audit of `graphql-http`, against the running server's /graphql.
 * Every MUST audit is a test that has to pass; SHOULD and MAY audits are tests too, but a failing one
 * only reports a diagnostic (they are recommendations).
 */
describe('contract: GraphQL over HTTP audit (graphql-http serverAudits) against /graphql', () => {
  let t: TestApp | undefined;
  const keyed = (input: Parameters<typeof fetch>[0], init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set('x-api-key', t!.adminKey);
    return fetch(input, { ...init, headers });
  };
  const audits = serverAudits({ url: () => `${t!.url}/graphql`, fetchFn: keyed });

  before(async () => {
    t = await startApp();
  });
  after(() => t?.close());

  it('when the audit list is built, then it has MUST audits to run', () => {
    assert.ok(audits.filter((a) => a.name.startsWith('MUST')).length > 10);
  });

  for (const audit of audits) {
    const must = audit.name.startsWith('MUST');
    it(`when audited, then ${audit.name} (${audit.id})`, async (ctx) => {
      const result = await audit.fn();
      if (result.status === 'ok') return;
      const detail = `${result.status}: ${result.reason}${'response' in result && result.response ? ` (HTTP ${result.response.status})` : ''}`;
      if (must) assert.fail(detail);
      ctx.diagnostic(detail);
    });
  }
});
