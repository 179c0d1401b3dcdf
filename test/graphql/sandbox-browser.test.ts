import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { startApp, type TestApp } from '../helpers/app.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
const skip = !haveChromium && process.env.REQUIRE_SERVICES !== '1' ? `no Chromium at ${CHROMIUM} (apt-get install -y chromium)` : false;

/**
 * Stands in for Apollo's CDN script (tests run offline): it records the options the landing page
 * passes to the embedded Sandbox instead of drawing it.
 */
const SANDBOX_STUB = 'window.EmbeddedSandbox = function (options) { window.__sandboxOptions = options; };';

describe('GraphQL: Apollo Sandbox in a real browser (headless Chromium)', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  before(async () => {
    t = await startApp();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('when a developer opens /graphql in a browser, then the page starts the embedded Sandbox on this endpoint with an X-API-Key header to fill in', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    // Other off-origin requests (fonts, icons) are aborted, and Chromium logs those; a blocked script or style is what matters.
    page.on('console', (m) => /Refused to|Content Security Policy/i.test(m.text()) && problems.push(`console: ${m.text()}`));
    const cdn: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(t.url)) return route.continue();
      if (url.startsWith('https://embeddable-sandbox.cdn.apollographql.com/')) {
        cdn.push(url);
        return route.fulfill({ status: 200, contentType: 'application/javascript', body: SANDBOX_STUB });
      }
      return route.abort();
    });
    const response = await page.goto(`${t.url}/graphql`);
    assert.equal(response?.status(), 200);
    assert.match(response?.headers()['content-type'] ?? '', /^text\/html/);
    await page.waitForFunction(() => (globalThis as { __sandboxOptions?: unknown }).__sandboxOptions !== undefined);
    const options = await page.evaluate(() => (globalThis as unknown as { __sandboxOptions: any }).__sandboxOptions);
    assert.equal(cdn.length, 1, 'the Sandbox script is loaded once');
    assert.equal(options.initialEndpoint, `${t.url}/graphql`);
    assert.equal(options.target, '#embeddableSandbox');
    assert.deepEqual(options.initialState.sharedHeaders, { 'X-API-Key': '' });
    assert.equal(options.initialState.includeCookies, false);
    assert.equal(options.runTelemetry, false);
    assert.equal(await page.locator('#embeddableSandbox').count(), 1);
    assert.deepEqual(problems, [], 'the page runs without errors under its security headers');
    await page.close();
  });

  it('when the browser has no internet, then /graphql says so and its link opens the local explorer at /graphiql', async () => {
    const page = await browser.newPage();
    // Offline: every request off this service's origin fails (Apollo's CDN, fonts).
    await page.route('**/*', (route) => (route.request().url().startsWith(t.url) ? route.continue() : route.abort('internetdisconnected')));
    const response = await page.goto(`${t.url}/graphql`);
    assert.equal(response?.status(), 200);
    const link = page.locator('#offline-explorer a[href="/graphiql"]');
    await link.waitFor({ state: 'visible' });
    assert.match(await page.locator('#offline-explorer').innerText(), /Without internet, explore the API with GraphiQL/);
    // The link is the top element where it is drawn (nothing covers it), and it leads to the explorer.
    await link.click();
    await page.waitForURL(`${t.url}/graphiql`);
    await page.locator('.graphiql-container .graphiql-query-editor .CodeMirror').waitFor();
    await page.close();
  });
});
