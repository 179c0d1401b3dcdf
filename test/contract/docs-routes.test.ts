import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';

describe('contract: /docs over HTTP (no browser)', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when /docs is fetched without a key, then it answers the HTML page under a CSP that allows only this origin', async () => {
    const res = await t.anonymous.get('/docs', { skipContract: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /connect-src 'self'(;|$)/);
    assert.doesNotMatch(res.text, /<script>(?!<\/script>)|https?:\/\//, 'no inline script and no absolute (CDN) address');
    assert.match(res.text, /data-spec-url="\/v1\/openapi\.json"/);
  });

  it('when every script, stylesheet and icon the page references is fetched, then each is served locally with its type', async () => {
    const page = (await t.anonymous.get('/docs', { skipContract: true })).text;
    const refs = [...page.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    assert.deepEqual(refs.sort(), [
      '/docs/assets/favicon-32x32.png',
      '/docs/assets/petstore-docs.css',
      '/docs/assets/petstore-docs.js',
      '/docs/assets/swagger-ui-bundle.js',
      '/docs/assets/swagger-ui.css',
    ]);
    for (const ref of refs) {
      const res = await fetch(t.url + ref);
      assert.equal(res.status, 200, ref);
      const type = res.headers.get('content-type') ?? '';
      assert.match(type, ref.endsWith('.js') ? /^text\/javascript/ : ref.endsWith('.css') ? /^text\/css/ : /^image\/png/, ref);
      assert.ok((await res.arrayBuffer()).byteLength > 0, ref);
      // Cached by shared caches for an hour: one copy per encoding and per origin (CORS), so both are named.
      const vary = (res.headers.get('vary') ?? '').split(',').map((name) => name.trim().toLowerCase());
      assert.deepEqual(vary.sort(), ['accept-encoding', 'origin'], ref);
    }
  });

  it('when /docs is served outside production, then its header links GraphiQL and the Sandbox; in production (neither exists there), then it links neither', async () => {
    const page = (await t.anonymous.get('/docs', { skipContract: true })).text;
    assert.match(page, /href="\/graphiql"/);
    assert.match(page, /href="\/graphql"/);
    const prod = await startApp({ env: { NODE_ENV: 'production' } });
    try {
      const res = await prod.anonymous.get('/docs', { skipContract: true });
      assert.equal(res.status, 200);
      assert.doesNotMatch(res.text, /href="\/graphi?ql"/);
      assert.match(res.text, /href="\/v1\/openapi\.yaml"/);
    } finally {
      await prod.close();
    }
  });

  it('when /docs/ has a trailing slash, then it redirects to /docs', async () => {
    const res = await fetch(`${t.url}/docs/`, { redirect: 'manual' });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('location'), '/docs');
  });

  it('when an unknown asset is asked for, then it is the 404 error envelope', async () => {
    const res = await t.anonymous.get('/docs/assets/../../package.json', { skipContract: true });
    assert.equal(res.status, 404);
    const other = await t.anonymous.get('/docs/assets/nope.js', { skipContract: true });
    assert.equal(other.status, 404);
    assert.equal(other.body.code, 'NOT_FOUND');
  });

  it('when an asset is named after an Object property (constructor, __proto__, toString), then it is 404, not 500, on /docs and /graphiql', async () => {
    for (const base of ['/docs/assets/', '/graphiql/assets/']) {
      for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        const res = await t.anonymous.get(base + name, { skipContract: true });
        assert.equal(res.status, 404, `${base}${name}`);
        assert.equal(res.body.code, 'NOT_FOUND');
        assert.ok(res.body.requestId);
      }
    }
  });

  it('when /docs is posted to, then it is 405 with Allow: GET, HEAD', async () => {
    const res = await t.anonymous.post('/docs', {}, { skipContract: true });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
    assert.equal(res.body.code, 'METHOD_NOT_ALLOWED');
  });
});
