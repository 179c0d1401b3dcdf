import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page, type Locator } from 'playwright-core';
import { startApp, type TestApp } from '../helpers/app.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const haveChromium = existsSync(CHROMIUM);
const skip = !haveChromium && process.env.REQUIRE_SERVICES !== '1' ? `no Chromium at ${CHROMIUM} (apt-get install -y chromium)` : false;

/** The summary bar of one operation in Swagger UI: method + path. */
function operation(page: Page, method: string, path: string): Locator {
  // Swagger UI swaps the method class for `opblock-deprecated` on deprecated operations, so match the method label.
  return page
    .locator('.opblock')
    .filter({ has: page.locator('.opblock-summary-method', { hasText: new RegExp(`^${method}$`) }) })
    .filter({ has: page.locator(`[data-path="${path}"]`) });
}

async function expand(op: Locator): Promise<void> {
  if (!(await op.locator('.opblock-body').count())) await op.locator('.opblock-summary-control').click();
  await op.locator('.opblock-body').waitFor();
  // Parameters (where "Try it out" lives) render once the operation's subtree is resolved.
  await op.locator('.opblock-section-header').first().waitFor();
}

describe('contract: the /docs reference page in headless Chromium', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async () => {
    t = await startApp();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    page.on('console', (m) => {
      // The try-it request below is deliberately anonymous; Chromium logs its 401 as a console error.
      if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`failed: ${r.url()}`));
    // Nothing may come from elsewhere (no CDN): abort and record any request off this origin.
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(t.url) || url.startsWith('data:')) return route.continue();
      problems.push(`off-origin: ${url}`);
      return route.abort();
    });
    const res = await page.goto(`${t.url}/docs`);
    assert.equal(res?.status(), 200);
    await page.locator('.opblock').first().waitFor();
  });

  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('when /docs loads, then it renders the document titled from /v1/openapi.json with every operation, without errors or off-origin requests', async () => {
    await assert.doesNotReject(page.locator('.info .title', { hasText: 'Petstore API' }).waitFor());
    const served = (await t.anonymous.get('/v1/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const count = Object.values(served.paths).reduce((n, item) => n + Object.keys(item).filter((k) => k !== 'parameters').length, 0);
    assert.equal(await page.locator('.opblock').count(), count);
    await page.screenshot({ path: join(tmpdir(), 'petstore-docs.png'), fullPage: false });
    assert.deepEqual(problems, []);
  });

  it('when GET /pets/{petId} is shown, then it is marked deprecated with its sunset date', async () => {
    const op = operation(page, 'GET', '/pets/{petId}');
    assert.equal(await op.count(), 1);
    assert.match((await op.getAttribute('class')) ?? '', /opblock-deprecated/);
    const badge = op.locator('[data-badge="deprecated"]');
    assert.equal((await badge.textContent())?.trim(), 'Deprecated · sunset 2027-06-30');
  });

  it('when beta and experimental operations are shown, then they carry their stability badges', async () => {
    const beta = operation(page, 'GET', '/store/inventory').locator('[data-badge="stability"]');
    assert.equal((await beta.textContent())?.trim(), 'Beta');
    const experimental = operation(page, 'DELETE', '/store/orders/{orderId}').locator('[data-badge="stability"]');
    assert.equal((await experimental.textContent())?.trim(), 'Experimental');
    assert.equal(await operation(page, 'GET', '/pets').locator('[data-badge="stability"]').count(), 0);
  });

  it('when GET /pets is expanded, then it offers "Try it out" and running it shows a live 401 for the anonymous caller', async () => {
    const op = operation(page, 'GET', '/pets');
    await expand(op);
    const tryIt = op.getByRole('button', { name: 'Try it out' });
    assert.equal(await tryIt.count(), 1);
    await tryIt.click();
    await op.getByRole('button', { name: 'Execute' }).click();
    const status = op.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor();
    assert.match((await status.textContent()) ?? '', /401/);
    await page.screenshot({ path: join(tmpdir(), 'petstore-docs-try-it.png'), fullPage: false });
  });

  it('when the staff key is entered under Authorize, then executing GET /pets from the page answers 200', async () => {
    await page.locator('.auth-wrapper .authorize').click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('input[type="password"], input[type="text"]').first().fill(t.adminKey);
    await dialog.getByRole('button', { name: 'Apply credentials' }).click();
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    const op = operation(page, 'GET', '/pets');
    await op.getByRole('button', { name: 'Execute' }).click();
    const status = op.locator('.live-responses-table tbody .response-col_status').first();
    await page.waitForFunction((el) => el?.textContent?.includes('200'), await status.elementHandle());
    assert.match((await status.textContent()) ?? '', /200/);
  });

  it('when GET /store/orders is expanded, then there is no try-it control, only a note saying why', async () => {
    const op = operation(page, 'GET', '/store/orders');
    await expand(op);
    assert.equal(await op.getByRole('button', { name: /try it out/i }).count(), 0);
    assert.equal(await op.locator('.try-out').count(), 0);
    assert.equal(await op.locator('[data-note="no-try-it"]').count(), 1);
    await op.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(tmpdir(), 'petstore-docs-orders.png'), fullPage: false });
    assert.deepEqual(problems, []);
  });
});
