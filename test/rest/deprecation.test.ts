import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPet, startApp, type TestApp } from '../helpers/app.js';
import { assertError } from './support.js';

describe('REST deprecation of GET /pets/{petId}', () => {
  describe('before the sunset (default date)', () => {
    let t: TestApp;
    before(async () => {
      t = await startApp();
    });
    after(() => t.close());

    it('when a pet is fetched, then the answer carries Deprecation, Sunset and a Link to the successor, which works', async () => {
      const { petId } = await createPet(t);
      const res = await t.admin.get(`/v1/pets/${petId}`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('deprecation') ?? '', /^@\d+$/);
      const deprecatedAt = Number(res.headers.get('deprecation')!.slice(1)) * 1000;
      assert.equal(res.headers.get('sunset'), 'Wed, 30 Jun 2027 00:00:00 GMT');
      assert.ok(deprecatedAt < Date.parse(res.headers.get('sunset')!), 'deprecated before it sunsets');
      const link = /^<([^>]+)>;\s*rel="successor-version"$/.exec(res.headers.get('link') ?? '');
      assert.ok(link, res.headers.get('link') ?? 'no Link');
      const successor = await t.admin.get(link[1]!);
      assert.equal(successor.status, 200);
      assert.deepEqual(successor.body, [res.body]);
    });

    it('when the answer is an error (404, 400, 401), then it still carries Deprecation, Sunset and Link', async () => {
      for (const res of [await t.admin.get('/v1/pets/987654'), await t.admin.get('/v1/pets/0'), await t.anonymous.get('/v1/pets/1')]) {
        assert.ok(res.status >= 400, `status ${res.status}`);
        assert.match(res.headers.get('deprecation') ?? '', /^@\d+$/, `Deprecation on ${res.status}`);
        assert.equal(res.headers.get('sunset'), 'Wed, 30 Jun 2027 00:00:00 GMT', `Sunset on ${res.status}`);
        assert.match(res.headers.get('link') ?? '', /rel="successor-version"/, `Link on ${res.status}`);
      }
    });

    it('when the document is read, then the operation is deprecated with the same x-sunset', async () => {
      const doc = (await t.anonymous.get('/v1/openapi.json')).body;
      assert.equal(doc.paths['/pets/{petId}'].get.deprecated, true);
      assert.equal(doc.paths['/pets/{petId}'].get['x-sunset'], '2027-06-30');
    });
  });

  describe('with another sunset date configured', () => {
    let t: TestApp;
    before(async () => {
      t = await startApp({ env: { PETS_GET_SUNSET: '2099-01-31' } });
    });
    after(() => t.close());

    it('when a pet is fetched, then Sunset is the configured date', async () => {
      const { petId } = await createPet(t);
      const res = await t.admin.get(`/v1/pets/${petId}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('sunset'), 'Sat, 31 Jan 2099 00:00:00 GMT');
    });

    it('when the OpenAPI document is read (JSON and YAML), then its x-sunset is the configured date', async () => {
      const json = await t.admin.get('/v1/openapi.json');
      assert.equal(json.body.paths['/pets/{petId}'].get['x-sunset'], '2099-01-31');
      const yaml = await t.admin.get('/v1/openapi.yaml');
      assert.match(yaml.text, /\n\s+x-sunset: '2099-01-31'\n/);
      assert.doesNotMatch(yaml.text, /2027-06-30'/);
    });
  });

  describe('after the sunset', () => {
    let t: TestApp;
    before(async () => {
      t = await startApp({ env: { PETS_GET_SUNSET: '2020-01-01' } });
    });
    after(() => t.close());

    it('when a pet is fetched, then it is 410 OPERATION_SUNSET naming the successor, with the Sunset header', async () => {
      const { petId } = await createPet(t);
      const res = await t.admin.get(`/v1/pets/${petId}`);
      assertError(res, 410, 'OPERATION_SUNSET');
      assert.match(res.body.message, new RegExp(`/v1/pets\\?ids=${petId}`));
      assert.equal(res.headers.get('sunset'), 'Wed, 01 Jan 2020 00:00:00 GMT');
      assert.match(res.headers.get('link') ?? '', /rel="successor-version"/);
      assertError(await t.admin.get('/v1/pets/424242'), 410, 'OPERATION_SUNSET');
      const deprecatedAt = Number((res.headers.get('deprecation') ?? '@NaN').slice(1)) * 1000;
      assert.ok(deprecatedAt <= Date.parse('2020-01-01T00:00:00Z'), 'the deprecation date is not after the sunset');
    });

    it('when the successor or the other pet operations are used, then they still work', async () => {
      const { petId, categoryId } = await createPet(t);
      assert.equal((await t.admin.get(`/v1/pets?ids=${petId}`)).body[0].id, petId);
      assert.equal((await t.admin.put(`/v1/pets/${petId}`, { name: 'Still here', categoryId })).status, 200);
      assert.equal((await t.admin.delete(`/v1/pets/${petId}`)).status, 204);
    });

    it('when no key is sent, then authentication still comes first (401, not 410)', async () => {
      assertError(await t.anonymous.get('/v1/pets/1'), 401, 'UNAUTHENTICATED');
    });
  });
});
