import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, createAccount, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';

/** A staff key always remains (no API way back otherwise); shown key prefixes expose only 4 secret characters. */
const assertLastStaff = (res: TestResponse) => {
  assert.equal(res.status, 409, res.text);
  assert.equal(res.body.code, 'LAST_STAFF_KEY');
  assert.equal(res.body.status, 409);
  assert.ok(res.body.requestId);
};
const assertLastStaffGql = (res: TestResponse) => {
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.errors?.[0]?.extensions?.code, 'LAST_STAFF_KEY', res.text);
  assert.equal(res.body.errors[0].extensions.status, 409);
};

describe('the last staff key cannot be given up', () => {
  let t: TestApp;
  let admin: { accountId: number; keyId: number };
  before(async () => {
    t = await startApp();
    const me = await t.admin.get('/v1/account');
    admin = { accountId: me.body.id, keyId: me.body.apiKey.id };
  });
  after(() => t?.close());

  it('when the only staff account demotes itself, then it is 409 LAST_STAFF_KEY on both facades and nothing changes', async () => {
    assertLastStaff(await t.admin.patch(`/v1/accounts/${admin.accountId}`, { role: 'customer', name: 'Renamed' }));
    assertLastStaffGql(
      await t.admin.graphql('mutation ($id: ID!) { updateAccount(id: $id, input: {role: customer}) { role } }', {
        id: globalId('Account', admin.accountId),
      }),
    );
    const me = await t.admin.get('/v1/account');
    assert.equal(me.body.role, 'staff');
    assert.equal(me.body.name, 'Administrator', 'a refused update changes nothing, not even the other fields');
  });

  it('when the last active staff key is revoked, then it is 409 LAST_STAFF_KEY on both facades and the key still works', async () => {
    assertLastStaff(await t.admin.delete(`/v1/api-keys/${admin.keyId}`));
    assertLastStaffGql(
      await t.admin.graphql('mutation ($id: ID!) { revokeApiKey(keyId: $id) { revokedAt } }', { id: globalId('ApiKey', admin.keyId) }),
    );
    assert.equal((await t.admin.get('/v1/account')).status, 200);
  });

  it('when another staff key exists, then the first staff account may be demoted, and the remaining staff key is the last one', async () => {
    const second = await createAccount(t, { role: 'staff', plan: 'business' });
    const demoted = await second.client.patch(`/v1/accounts/${admin.accountId}`, { role: 'customer' });
    assert.equal(demoted.status, 200, demoted.text);
    assertLastStaff(await second.client.delete(`/v1/api-keys/${second.keyId}`));
    assertLastStaff(await second.client.patch(`/v1/accounts/${second.accountId}`, { role: 'customer' }));
    // A second key on the staff account: now one of them may go.
    const extra = await second.client.post(`/v1/accounts/${second.accountId}/api-keys`);
    assert.equal(extra.status, 201, extra.text);
    assert.equal((await second.client.delete(`/v1/api-keys/${second.keyId}`)).status, 204);
  });
});

describe('the last staff key under concurrent changes', () => {
  it('when the only two staff keys revoke each other at the same instant (five times), then one change passes and a staff key always remains', async () => {
    const t = await startApp();
    try {
      let survivor = { client: t.admin, keyId: (await t.admin.get('/v1/account')).body.apiKey.id as number };
      for (let round = 0; round < 5; round++) {
        const made = await survivor.client.post('/v1/accounts', { name: `Staff ${round}`, role: 'staff', plan: 'business' });
        assert.equal(made.status, 201, made.text);
        const other = { client: new Client(t.url, made.body.apiKey.key), keyId: made.body.apiKey.id as number };
        const answers = await Promise.all([
          survivor.client.delete(`/v1/api-keys/${other.keyId}`),
          other.client.delete(`/v1/api-keys/${survivor.keyId}`),
        ]);
        const passed = answers.filter((res) => res.status === 204);
        assert.equal(passed.length, 1, `round ${round}: ${answers.map((res) => `${res.status} ${res.body?.code ?? ''}`).join(', ')}`);
        for (const res of answers) if (res.status !== 204) assert.ok([401, 409].includes(res.status), res.text);
        survivor = answers[0]!.status === 204 ? survivor : { client: other.client, keyId: other.keyId };
        assert.equal((await survivor.client.get('/v1/account')).status, 200, 'the remaining staff key works');
      }
    } finally {
      await t.close();
    }
  });
});

describe('shown key prefixes', () => {
  it('when keys are listed or GET /account is read, then the prefix shows psk_ and only 4 characters of the secret', async () => {
    const t = await startApp();
    try {
      const customer = await createAccount(t, { plan: 'free' });
      const me = await customer.client.get('/v1/account');
      assert.equal(me.body.apiKey.prefix, customer.key.slice(0, 8));
      const listed = await t.admin.graphql('query ($id: ID!) { apiKeys(accountId: $id) { prefix } }', {
        id: globalId('Account', customer.accountId),
      });
      assert.deepEqual(listed.body.data.apiKeys, [{ prefix: customer.key.slice(0, 8) }]);
      assert.equal((await t.admin.get(`/v1/accounts/${customer.accountId}/api-keys`)).body[0].prefix, customer.key.slice(0, 8));
    } finally {
      await t.close();
    }
  });
});
