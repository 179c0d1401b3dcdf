/**
 * The README's two walkthroughs, as the tests run them: the REST block as one bash script (its shell
 * variables carry ids from one answer to the next), the GraphQL block operation by operation with one
 * Variables object that grows as the README tells the reader to grow it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { projectPath } from '../../src/project-path.js';

const run = promisify(execFile);

export const readme = () => readFileSync(projectPath('README.md'), 'utf8');

/** A reference page of docs/ (e.g. `EVENTS.md`), whose examples some tests run as they stand. */
export const doc = (page: string) => readFileSync(projectPath(`docs/${page}`), 'utf8');

/** The README's `# → ` lines: `…` stands for anything. */
export const pattern = (expected: string) =>
  new RegExp(
    `^${expected
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

function between(text: string, start: string, end: string): string {
  const block = text.split(start)[1]?.split(end)[0];
  assert.ok(block, `README has a ${start} … ${end} block`);
  return block;
}

/**
 * Runs the REST walkthrough in one bash process with BASE (the service's address, as `npm start` prints it),
 * STAFF and CUSTOMER from `env` (an `export` line of those in the block is left out), and checks every
 * command's output against its `# → ` line.
 */
export async function runRestWalkthrough(env: { BASE: string; STAFF: string; CUSTOMER: string }): Promise<number> {
  const code = between(readme(), '<!-- walkthrough:start -->', '<!-- walkthrough:end -->').split('```sh\n')[1]!.split('```')[0]!;
  const marker = '@@README-STEP@@';
  const script: string[] = ['set -euo pipefail'];
  const expected: string[] = [];
  const lines = code.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^export (BASE|STAFF|CUSTOMER)=/.test(line)) continue;
    if (line.startsWith('# → ')) {
      expected.push(line.slice('# → '.length));
      script.push(`echo '${marker}'`);
    } else script.push(line);
  }
  const { stdout } = await run('bash', ['-c', script.join('\n')], { env: { ...process.env, ...env }, encoding: 'utf8' });
  const outputs = stdout.split(`${marker}\n`);
  assert.equal(outputs.length - 1, expected.length, `every step printed something:\n${stdout}`);
  for (const [i, want] of expected.entries()) assert.match(outputs[i]!.trim(), pattern(want), `README REST step ${i + 1}:\n${outputs[i]}`);
  return expected.length;
}

export interface GraphqlStep {
  role: 'staff' | 'customer';
  document: string;
  expected: string;
}

/** The README's GraphQL walkthrough: each operation, the key it runs with, and the `# → ` line after it. */
export function graphqlWalkthrough(): GraphqlStep[] {
  const block = between(readme(), '<!-- graphql-walkthrough:start -->', '<!-- graphql-walkthrough:end -->');
  const code = block.split('```graphql\n')[1]!.split('```')[0]!;
  const steps: GraphqlStep[] = [];
  let role: GraphqlStep['role'] | undefined;
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

/**
 * What the README tells the reader to put in the Variables pane: the `id` of each `createCategory`,
 * `createPet` and `placeOrder` answer, as `categoryId`, `petId`, `orderId`.
 */
export function rememberIds(variables: Record<string, string>, data: Record<string, unknown> | null | undefined): void {
  for (const [field, value] of Object.entries(data ?? {})) {
    const noun = /^(?:create|place)([A-Z]\w*)$/.exec(field)?.[1];
    const id = (value as { id?: unknown } | null)?.id;
    if (noun && typeof id === 'string') variables[`${noun[0]!.toLowerCase()}${noun.slice(1)}Id`] = id;
  }
}

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

/** Runs every GraphQL step with `send`, the variables growing as the README says; checks each answer. */
export async function runGraphqlWalkthrough(
  send: (role: GraphqlStep['role'], document: string, variables: Record<string, string>) => Promise<string>,
): Promise<number> {
  const steps = graphqlWalkthrough();
  const variables: Record<string, string> = {};
  for (const step of steps) {
    const text = shown((await send(step.role, step.document, variables)).trim(), step.expected);
    assert.match(text, pattern(step.expected), `README step as ${step.role}:\n${step.document}\nvariables: ${JSON.stringify(variables)}`);
    rememberIds(variables, (JSON.parse(text) as { data?: Record<string, unknown> }).data);
  }
  return steps.length;
}
