import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { createPet, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
const skip = !haveChromium && process.env.REQUIRE_SERVICES !== '1' ? `no Chromium at ${CHROMIUM} (apt-get install -y chromium)` : false;

/** The headers editor: the visible one of the two in the tools pane (variables and headers). */
const HEADERS = '.graphiql-editor-tool .graphiql-editor:not(.hidden)';

/** The CodeMirror editor inside `selector` (GraphiQL 3's editors are CodeMirror 5 instances). */
const editorValue = (selector: string, value?: string) =>
  `(() => { const cm = document.querySelector(${JSON.stringify(`${selector} .CodeMirror`)}).CodeMirror;` +
  `${value === undefined ? '' : `cm.setValue(${JSON.stringify(value)});`} return cm.getValue(); })()`;

describe('GraphQL: the GraphiQL explorer at /graphiql works offline, in headless Chromium (issue 13, item 5)', { skip }, () => {
  let t: TestApp;
  let browser: Browser;
  before(async () => {
    t = await startApp({ env: { SEED_DEMO: 'true' } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /**
   * A new page with the network beyond the service cut: every request elsewhere is aborted and recorded
   * (`offOrigin`); page errors and CSP refusals are recorded in `problems`.
   */
  async function offlinePage() {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => /Refused to|Content Security Policy/i.test(m.text()) && problems.push(`console: ${m.text()}`));
    const offOrigin: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(t.url) || url.startsWith('data:')) return route.continue();
      offOrigin.push(url);
      return route.abort();
    });
    return { page, problems, offOrigin };
  }

  it('when the network beyond the service is cut and a key is put in the headers pane, then a query run in /graphiql shows data', async () => {
    const { page, problems, offOrigin } = await offlinePage();

    // On load GraphiQL asks for the schema, still without a key (a 401 it shows in the result pane): let that
    // answer arrive first, or on a busy machine it can land after the query's and overwrite it.
    const schemaAsked = page.waitForResponse(
      (r) => r.url() === `${t.url}/graphql` && /IntrospectionQuery/.test(r.request().postData() ?? ''),
    );
    const response = await page.goto(`${t.url}/graphiql`);
    assert.equal(response?.status(), 200);
    await page.locator('.graphiql-container .graphiql-query-editor .CodeMirror').waitFor();
    await schemaAsked;
    // The headers pane is open, waiting for a key.
    assert.deepEqual(JSON.parse(await page.evaluate<string>(editorValue(HEADERS))), { 'X-API-Key': '' });

    await page.evaluate(editorValue(HEADERS, JSON.stringify({ 'X-API-Key': t.adminKey })));
    await page.evaluate(
      editorValue('.graphiql-query-editor', 'query Names { pets(first: 3) { edges { node { name } } } viewer { role } }'),
    );
    // Run it. A click that lands while GraphiQL re-renders can be lost on a busy machine, so click again when
    // nothing came back and no request is running (the button reads "Stop query" then): at most 4 clicks.
    let shownText = '';
    const button = page.locator('.graphiql-execute-button');
    for (let attempt = 0; attempt < 4 && !/"role"/.test(shownText); attempt++) {
      if (!/stop/i.test((await button.getAttribute('aria-label')) ?? '')) await button.click();
      for (let poll = 0; poll < 25 && !/"role"/.test(shownText); poll++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        shownText = await page.evaluate<string>(editorValue('.graphiql-response'));
      }
    }
    assert.match(shownText, /"role"/, `the result pane shows the answer; it shows: ${shownText}`);
    const shown = JSON.parse(shownText);
    assert.equal(shown.errors, undefined, JSON.stringify(shown));
    assert.equal(shown.data.viewer.role, 'staff');
    assert.equal(shown.data.pets.edges.length, 3);
    // The key is not kept where other tabs or a later visit would find it: nothing in localStorage names it
    // (GraphiQL's history records each run's headers; it is kept in this tab's sessionStorage).
    const stored = await page.evaluate<string>('JSON.stringify(Object.entries(localStorage))');
    assert.doesNotMatch(stored, new RegExp(t.adminKey), 'the key is not in localStorage');
    assert.match(await page.evaluate<string>('JSON.stringify(Object.entries(sessionStorage))'), /Names/, 'the history is in the tab');

    assert.deepEqual(offOrigin, [], 'everything the explorer needs comes from the service');
    assert.deepEqual(problems, [], 'the page runs without errors under its security headers');
    await page.close();
  });

  it('when a subscription runs in /graphiql, then without a key the pane shows the refusal, and with the key a stock change made through REST shows up', async () => {
    const { page, problems, offOrigin } = await offlinePage();
    // Routes do not see WebSockets: every socket the page opens is recorded, and whether it has closed.
    const sockets: Array<{ url: string; closed: boolean }> = [];
    page.on('websocket', (ws) => {
      const socket = { url: ws.url(), closed: false };
      sockets.push(socket);
      ws.on('close', () => (socket.closed = true));
    });
    const { petId } = await createPet(t, { stock: 3, name: 'Subscribed' });

    const schemaAsked = page.waitForResponse(
      (r) => r.url() === `${t.url}/graphql` && /IntrospectionQuery/.test(r.request().postData() ?? ''),
    );
    const response = await page.goto(`${t.url}/graphiql`);
    // The page's policy lets it connect to its own origin only; Chromium counts ws:// of that origin in.
    assert.match(response?.headers()['content-security-policy'] ?? '', /connect-src 'self'/);
    await page.locator('.graphiql-container .graphiql-query-editor .CodeMirror').waitFor();
    await schemaAsked;
    await page.evaluate(
      editorValue(
        '.graphiql-query-editor',
        `subscription Stock { inventoryChanged(petId: "${globalId('Pet', petId)}") { petId quantity status } }`,
      ),
    );
    const button = page.locator('.graphiql-execute-button');
    const running = async () => /stop/i.test((await button.getAttribute('aria-label')) ?? '');
    const shown = () => page.evaluate<string>(editorValue('.graphiql-response'));
    /** Runs the operation until `done` holds: a click lost while GraphiQL re-renders is repeated (at most 4), never one that started a run. */
    const runUntil = async (done: () => Promise<boolean>) => {
      for (let attempt = 0; attempt < 4; attempt++) {
        if (!(await running())) await button.click();
        for (let poll = 0; poll < 25; poll++) {
          if (await done()) return;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    };

    // Without a key (the Headers pane as the page opens: {"X-API-Key": ""}) the server closes the socket with
    // 4403, and the pane shows it at once (graphql-ws's default retries would hold it back for minutes).
    let text = '';
    await runUntil(async () => /4403/.test((text = await shown())));
    assert.match(text, /4403/, `the result pane shows the refusal; it shows: ${text}`);
    const refusal = JSON.parse(text);
    assert.equal(refusal.errors[0].extensions.closeCode, 4403, text);
    assert.match(refusal.errors[0].extensions.closeReason, /^UNAUTHENTICATED: send your API key/, text);
    assert.match(refusal.errors[0].message, /X-API-Key is missing or unknown/);
    assert.doesNotMatch(refusal.errors[0].message, /\.\./, 'one full stop after the reason');
    assert.equal(await running(), false, 'the run is over');

    await page.evaluate(editorValue(HEADERS, JSON.stringify({ 'X-API-Key': t.adminKey })));
    await runUntil(running);
    assert.ok(await running(), 'the subscription runs (the button offers to stop it)');
    // A change through the REST API, as another client would make it. The subscription starts listening a
    // moment after the run (the server reads where the event log stands): a change made before then is not
    // pushed, so a new quantity is set until one shows (at most 5).
    let quantity = 0;
    for (let change = 1; change <= 5 && !new RegExp(`"quantity": ${quantity}\\b`).test(text); change++) {
      quantity = 10 + change;
      const res = await fetch(`${t.url}/v1/store/inventory/${petId}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'x-api-key': t.adminKey },
        body: JSON.stringify({ quantity }),
      });
      assert.equal(res.status, 200, await res.text());
      for (let poll = 0; poll < 25 && !new RegExp(`"quantity": ${quantity}\\b`).test(text); poll++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        text = await shown();
      }
    }
    const pushed = JSON.parse(text);
    // One root field and nothing nested: the pushed answer is free, and says so.
    assert.deepEqual(
      pushed,
      {
        data: { inventoryChanged: { petId: globalId('Pet', petId), quantity, status: 'available' } },
        extensions: { cost: { requested: 1, charged: 0 } },
      },
      text,
    );

    // Stop closes the subscription's socket (a click lost while GraphiQL re-renders is repeated: at most 4).
    for (let attempt = 0; attempt < 4 && (await running()); attempt++) {
      await button.click();
      for (let poll = 0; poll < 25 && (await running()); poll++) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal(await running(), false, 'the subscription stopped');
    for (let poll = 0; poll < 50 && !sockets.every((s) => s.closed); poll++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(sockets.length >= 2, `a socket per run: ${JSON.stringify(sockets)}`);
    assert.deepEqual(
      sockets.filter((s) => !s.closed),
      [],
      'no socket is left open',
    );
    assert.deepEqual(
      sockets.filter((s) => s.url !== `${t.url.replace(/^http/, 'ws')}/graphql`),
      [],
      'sockets go to the service only',
    );
    assert.deepEqual(offOrigin, [], 'everything the explorer needs comes from the service');
    assert.deepEqual(problems, [], 'the page runs without errors under its security headers');
    await page.close();
  });

  it('when /docs is opened, then it links to the explorer', async () => {
    const page = await browser.newPage();
    await page.route('**/*', (route) => (route.request().url().startsWith(t.url) ? route.continue() : route.abort()));
    await page.goto(`${t.url}/docs`);
    assert.equal(await page.locator('header a[href="/graphiql"]').count(), 1);
    await page.close();
  });
});

describe('GraphQL: the GraphiQL explorer in production', () => {
  it('when NODE_ENV=production, then /graphiql is not served (like the Sandbox), and its files neither', async () => {
    const t = await startApp({ env: { NODE_ENV: 'production' } });
    try {
      for (const path of ['/graphiql', '/graphiql/assets/graphiql.min.js']) {
        const res = await t.anonymous.get(path);
        assert.equal(res.status, 404, path);
        assert.equal(res.body.code, 'NOT_FOUND');
      }
    } finally {
      await t.close();
    }
  });
});
