import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, startApp, type TestApp } from './helpers/app.js';
import { runGraphqlWalkthrough, runRestWalkthrough } from './helpers/readme.js';

describe('README: the REST walkthrough twice, then the GraphQL one, on one database', () => {
  let t: TestApp;
  let customerKey: string;
  before(async () => {
    t = await startApp({ env: { SEED_DEMO: 'true' } });
    const announced = t.announced.join('\n');
    customerKey = /demo customer[\s\S]*?X-API-Key: (psk_[\w-]+)/.exec(announced)?.[1] ?? '';
    assert.ok(customerKey, `no demo customer key announced:\n${announced}`);
  });
  after(() => t.close());

  it('when the REST walkthrough runs as one script against a fresh service, then every command prints what the README shows', async () => {
    const steps = await runRestWalkthrough({ BASE: t.url, STAFF: t.adminKey, CUSTOMER: customerKey });
    assert.ok(steps >= 7, 'the walkthrough has its steps');
  });

  it('when the REST walkthrough runs again on the same database, then every command prints what the README shows again', async () => {
    const steps = await runRestWalkthrough({ BASE: t.url, STAFF: t.adminKey, CUSTOMER: customerKey });
    assert.ok(steps >= 7, 'the walkthrough has its steps');
  });

  it('when the GraphQL walkthrough runs next, on the same database, then it still answers what the README shows', async () => {
    const customer = new Client(t.url, customerKey);
    const steps = await runGraphqlWalkthrough(
      async (role, document, variables) => (await (role === 'staff' ? t.admin : customer).graphql(document, variables)).text,
    );
    assert.ok(steps >= 8, 'the walkthrough has its steps');
  });
});
