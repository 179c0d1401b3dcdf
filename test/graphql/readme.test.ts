import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { projectPath } from '../../src/project-path.js';
import { Client, startApp, type TestApp } from '../helpers/app.js';

interface Step {
  role: 'staff' | 'customer';
  document: string;
  expected: string;
}

/** The README's GraphQL walkthrough: each operation, the key it runs with, and the `# → ` line after it. */
function graphqlWalkthrough(readme: string): Step[] {
  const block = readme.split('<!-- graphql-walkthrough:start -->')[1]?.split('<!-- graphql-walkthrough:end -->')[0];
  assert.ok(block, 'README has a graphql-walkthrough block');
  const code = block.split('```graphql\n')[1]!.split('```')[0]!;
  const steps: Step[] = [];
  let role: Step['role'] | undefined;
  let lines: string[] = [];
  for (const line of code.split('\n')) {
    if (/^# As staff\b/.test(line)) role = 'staff';
    else if (/^# As the customer\b/.test(line)) role = 'customer';
    else if (line.startsWith('# → ')) {
      assert.ok(role, `README: no "# As …" line before ${lines.join(' ')}`);
      steps.push({ role, document: lines.join('\n'), expected: line.slice('# → '.length) });
      lines = [];
    } else if (line.trim() && !line.startsWith('#')) lines.push(line);
  }
  return steps;
}

const pattern = (expected: string) =>
  new RegExp(`^${expected.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);

/**
 * The answer as the README step shows it: a step may leave out `extensions.cost` (every executed
 * operation has it; test/rate-limit/graphql-cost.test.ts checks its value), the rest must match.
 */
function shown(text: string, expected: string): string {
  if (expected.includes('"cost":')) return text;
  const body = JSON.parse(text);
  delete body.extensions?.cost;
  if (body.extensions && Object.keys(body.extensions).length === 0) delete body.extensions;
  return JSON.stringify(body);
}

describe('README: the GraphQL walkthrough works as written', () => {
  let t: TestApp;
  let customer: Client;
  before(async () => {
    t = await startApp({ env: { SEED_DEMO: 'true' } });
    const key = /demo customer[\s\S]*?X-API-Key: (psk_[\w-]+)/.exec(t.announced.join('\n'))?.[1];
    assert.ok(key, 'the demo customer key is announced');
    customer = new Client(t.url, key);
  });
  after(() => t.close());

  it('when each operation of the GraphQL walkthrough runs against a fresh service, then it answers what the README shows', async () => {
    const steps = graphqlWalkthrough(readFileSync(projectPath('README.md'), 'utf8'));
    assert.ok(steps.length >= 6, 'the walkthrough has its steps');
    for (const step of steps) {
      const res = await (step.role === 'staff' ? t.admin : customer).graphql(step.document);
      assert.match(shown(res.text.trim(), step.expected), pattern(step.expected), `README step as ${step.role}:\n${step.document}`);
    }
  });
});
