import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createPet, startApp, type TestApp } from '../helpers/app.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip =
  !existsSync(CHROMIUM) && process.env.REQUIRE_SERVICES !== '1' ? `no Chromium at ${CHROMIUM} (apt-get install -y chromium)` : false;
const ORIGIN = 'http://example.test';
/** Served by the same site, not in CORS_ORIGINS. */
const OTHER_ORIGIN = 'http://other.test';

/**
 * A browser app on another origin (CORS_ORIGINS) uses conditional requests as a script would: it reads
 * the ETag of an answer and sends it back in If-None-Match (which needs a preflight), getting its 304.
 */
describe('CORS: a browser app on another origin, in headless Chromium', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let petId: number;
  let site: Server;

  before(async () => {
    t = await startApp({ env: { CORS_ORIGINS: ORIGIN } });
    ({ petId } = await createPet(t));
    // The app's page comes from its own server, which the browser reaches as example.test: a real
    // origin on this machine (Chromium blocks a page it cannot place on a network from local addresses).
    site = createServer((_req, res) => res.setHeader('content-type', 'text/html').end('<!doctype html><title>app</title>'));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const port = (site.address() as AddressInfo).port;
    const rules = `--host-resolver-rules=MAP example.test 127.0.0.1:${port}, MAP other.test 127.0.0.1:${port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', rules],
    });
    page = await browser.newPage();
    await page.goto(`${ORIGIN}/`);
  });

  after(async () => {
    await browser?.close();
    site?.close();
    await t?.close();
  });

  it('when the app reads an answer and asks again with its ETag, then the script sees the tag and gets its 304', async () => {
    const seen = await page.evaluate(
      async ({ url, key }) => {
        const first = await fetch(url, { headers: { 'X-API-Key': key } });
        const etag = first.headers.get('etag');
        await first.text();
        const again = await fetch(url, { headers: { 'X-API-Key': key, 'If-None-Match': etag ?? '' } });
        return { first: first.status, etag, again: again.status, remaining: again.headers.get('x-ratelimit-remaining') };
      },
      { url: `${t.url}/v1/pets?ids=${petId}`, key: t.adminKey },
    );
    assert.equal(seen.first, 200);
    assert.match(seen.etag ?? '', /^"[A-Za-z0-9_-]{20,}"$/, 'headers.get("etag") works across origins');
    assert.equal(seen.again, 304);
    assert.ok(seen.remaining, 'the 304 carries readable rate-limit headers');
  });

  it('when a page on an origin not allowed calls the API with a key, then the browser refuses it, and neither the key nor the address pays', async () => {
    const remaining = async () => Number((await t.admin.get(`/v1/pets?ids=${petId}`)).headers.get('x-ratelimit-remaining'));
    // A request without a key shows the address's failed-authentication window without counting in it.
    const addressRemaining = async () => Number((await fetch(`${t.url}/v1/pets`)).headers.get('x-ratelimit-remaining'));
    const before = await remaining();
    const addressBefore = await addressRemaining();
    const other = await browser.newPage();
    try {
      await other.goto(`${OTHER_ORIGIN}/`);
      const refused = await other.evaluate(
        async ({ url, key }) => {
          const results: string[] = [];
          const calls: Array<[string, RequestInit]> = [
            ['/v1/pets', { headers: { 'X-API-Key': key } }],
            [
              '/graphql',
              { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: '{"query":"{ viewer { id } }"}' },
            ],
          ];
          for (const [path, init] of calls) {
            try {
              results.push(`answered ${(await fetch(url + path, init)).status}`);
            } catch (error) {
              results.push((error as Error).name);
            }
          }
          return results;
        },
        { url: t.url, key: t.adminKey },
      );
      assert.deepEqual(refused, ['TypeError', 'TypeError'], 'the browser refuses both calls');
    } finally {
      await other.close();
    }
    // Only the two reads of this test were charged: the refused calls never reached the API, and their preflights
    // (which carry no key) counted no failed authentication against the page's address.
    assert.equal(await remaining(), before - 1);
    assert.equal(await addressRemaining(), addressBefore);
  });
});
