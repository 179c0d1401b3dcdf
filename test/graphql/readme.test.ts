import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { runGraphqlWalkthrough, runRestWalkthrough } from '../helpers/readme.js';

describe('README: the GraphQL walkthrough, then the REST one, on one database', () => {
  let t: TestApp;
  let customerKey: string;
  before(async () => {
    t = await startApp({ env: { SEED_DEMO: 'true' } });
    customerKey = /demo customer[\s\S]*?X-API-Key: (psk_[\w-]+)/.exec(t.announced.join('\n'))?.[1] ?? '';
    assert.ok(customerKey, 'the demo customer key is announced');
  });
  after(() => t.close());

  it('when each operation of the GraphQL walkthrough runs against a fresh service, with the variables the README says to set, then it answers what the README shows', async () => {
    const customer = new Client(t.url, customerKey);
    const steps = await runGraphqlWalkthrough(
      async (role, document, variables) => (await (role === 'staff' ? t.admin : customer).graphql(document, variables)).text,
    );
    assert.ok(steps >= 8, 'the walkthrough has its steps');
  });

  it('when the REST walkthrough runs next, on the same database, then every command still prints what the README shows', async () => {
    const steps = await runRestWalkthrough({ BASE: t.url, STAFF: t.adminKey, CUSTOMER: customerKey });
    assert.ok(steps >= 7, 'the walkthrough has its steps');
  });
});
