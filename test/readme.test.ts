import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { projectPath } from '../src/project-path.js';
import { startApp, type TestApp } from './helpers/app.js';

interface Step {
  command: string;
  expected: string;
}

/** The README's walkthrough block: each curl command with the `# → ` line that follows it. */
function walkthrough(): Step[] {
  const readme = readFileSync(projectPath('README.md'), 'utf8');
  const block = readme.split('<!-- walkthrough:start -->')[1]!.split('<!-- walkthrough:end -->')[0]!;
  const lines = block.split('\n');
  const steps: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith('curl ')) continue;
    let command = lines[i]!;
    while (command.endsWith('\\')) command = `${command.slice(0, -1)} ${lines[++i]!.trim()}`;
    const next = lines[i + 1] ?? '';
    assert.ok(next.startsWith('# → '), `README: no "# → " line after ${command}`);
    steps.push({ command, expected: next.slice('# → '.length) });
  }
  return steps;
}

const run = promisify(execFile);

const pattern = (expected: string) =>
  new RegExp(`^${expected.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);

describe('README: the first-five-minutes walkthrough works as written', () => {
  let t: TestApp;
  let customerKey: string;
  before(async () => {
    t = await startApp({ env: { SEED_DEMO: 'true' } });
    const announced = t.announced.join('\n');
    customerKey = /demo customer[\s\S]*?X-API-Key: (psk_[\w-]+)/.exec(announced)?.[1] ?? '';
    assert.ok(customerKey, `no demo customer key announced:\n${announced}`);
  });
  after(() => t.close());

  it('when each curl command of the walkthrough runs against a fresh service, then it prints what the README shows', async () => {
    const steps = walkthrough();
    assert.ok(steps.length >= 6, 'the walkthrough has its steps');
    const env = { ...process.env, BASE: `${t.url}/v1`, STAFF: t.adminKey, CUSTOMER: customerKey };
    for (const step of steps) {
      // Asynchronous: the service answers from this same process.
      const output = (await run('bash', ['-c', step.command], { env, encoding: 'utf8' })).stdout.trim();
      assert.match(output, pattern(step.expected), `README step: ${step.command}`);
    }
  });
});
