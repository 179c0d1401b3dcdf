/**
 * docs/ARCHITECTURE.md lists the request walk and the shutdown order; these tests compare both lists with
 * what src/app.ts wires, and check that a request takes one route only (REST never crosses GraphQL's
 * middleware, GraphQL never REST's) and that the one 404 answers everywhere.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { projectPath } from '../../src/project-path.js';
import { startApp, type TestApp } from '../helpers/app.js';

const architecture = readFileSync(projectPath('docs/ARCHITECTURE.md'), 'utf8');

function section(heading: string): string {
  const start = architecture.indexOf(`## ${heading}`);
  assert.ok(start >= 0, `docs/ARCHITECTURE.md has no "## ${heading}"`);
  const end = architecture.indexOf('\n## ', start + 1);
  return architecture.slice(start, end < 0 ? undefined : end);
}

/** The walk as the page lists it: the `→` lines of the edge, then one line per route (`paths → step → step`), then the last step. */
function documentedWalk() {
  const block = /```\n([\s\S]*?)```/.exec(section('A request, one way through'))![1]!;
  const name = (text: string) => text.split(/\s{2,}/)[0]!.trim();
  const edge: string[] = [];
  const routes: Array<{ paths: string[]; steps: string[] }> = [];
  let otherwise = '';
  for (const line of block.split('\n')) {
    const edgeStep = /^ {2}→ (.+)$/.exec(line);
    if (edgeStep) edge.push(name(edgeStep[1]!));
    const routeLine = /^ {2}(\/\S*(?: \/\S*)*)\s+→ (.+)$/.exec(line);
    if (routeLine) routes.push({ paths: routeLine[1]!.split(' '), steps: name(routeLine[2]!).split(' → ') });
    const last = /^ {2}anything else.* → (.+)$/.exec(line);
    if (last) otherwise = name(last[1]!);
  }
  return { edge, routes, otherwise };
}

describe('architecture: the request walk and the lifecycle are the ones the page lists', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when the app is wired, then its middleware order is the request walk docs/ARCHITECTURE.md lists', () => {
    assert.deepEqual(t.app.walk, documentedWalk());
  });

  it('when the app is wired, then shutdown stops the intake together, then closes the rest in the order docs/ARCHITECTURE.md lists', () => {
    const text = section('Lifecycle').replace(/\s+/g, ' ');
    const [first, then] = [text.slice(text.indexOf(' 1. '), text.indexOf(' 2. ')), text.slice(text.indexOf(' 2. '))];
    const order = t.app.shutdownOrder();
    assert.deepEqual(new Set(order.intake), new Set(['the HTTP drain', 'the GraphQL subscriptions', 'the event workers']));
    for (const name of order.intake) assert.ok(first.includes(name), `step 1 of the lifecycle does not name ${name}`);
    const positions = order.rest.map((name) => then.indexOf(name.replace(/^the /, '')));
    assert.ok(
      positions.every((p) => p >= 0),
      `step 2 of the lifecycle should name ${order.rest.join(', ')}`,
    );
    assert.deepEqual(
      positions,
      [...positions].sort((a, b) => a - b),
      `step 2 should list ${order.rest.join(', ')} in this order`,
    );
  });

  it('when a path is under no route, under /graphql or under /v1, then the one 404 answers, naming method and path', async () => {
    for (const [path, hint] of [
      ['/nowhere', '/v1'],
      ['/graphql/extra', '/graphql'],
      ['/v1/nowhere', '/v1/openapi.json'],
      ['/healthz/deeper', '/v1'],
    ] as const) {
      const res = await t.admin.get(path, { skipContract: true });
      assert.equal(res.status, 404, path);
      assert.equal(res.body.code, path.startsWith('/graphql') ? undefined : 'NOT_FOUND', path);
      assert.match(res.text, new RegExp(`Nothing at GET ${path.replace(/\//g, '\\/')}\\.`), path);
      assert.ok(res.text.includes(hint), `${path}: ${res.text}`);
    }
  });

  it('when a REST request is answered, then it never took the GraphQL route (and GraphQL never the REST one)', async () => {
    const rest = await t.admin.get('/v1/categories');
    assert.equal(rest.status, 200);
    // GraphQL's middleware marks every answer no-store; REST's marks its reads private, no-cache.
    assert.notEqual(rest.headers.get('cache-control'), 'no-store');
    const graphql = await t.admin.graphql('{ categories { edges { node { id } } } }');
    assert.equal(graphql.status, 200, graphql.text);
    assert.equal(graphql.headers.get('cache-control'), 'no-store');
    assert.equal(graphql.headers.get('etag'), null);
  });
});
