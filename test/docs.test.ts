/**
 * The README is the user's first page and docs/ holds the reference: the README stays short and opens
 * with a table of contents, every relative link between the pages (and its #anchor) resolves, and no
 * page points at material outside the project.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { projectPath } from '../src/project-path.js';

const pages = [
  'README.md',
  ...readdirSync(projectPath('docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const text = (page: string) => readFileSync(projectPath(page), 'utf8');
/** A page's lines as an editor numbers them: the newline that ends the last line opens no line of its own. */
const lineCount = (page: string) => text(page).replace(/\n$/, '').split('\n').length;

/** Markdown with its fenced code blocks blanked out (a `#` line in a shell block is no heading). */
function prose(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = heading!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    result.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return result;
}

/** Every inline link `[text](target)` of a page's prose. */
const links = (markdown: string) => [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);

describe('docs: the README as the first page, docs/ as the reference', () => {
  it('when the README is read, then it has at most 400 lines', () => {
    const lines = lineCount('README.md');
    assert.ok(lines <= 400, `README.md has ${lines} lines`);
  });

  it('when the decision records are read, then docs/DECISIONS.md has at most 400 lines', () => {
    const lines = lineCount('docs/DECISIONS.md');
    assert.ok(lines <= 400, `docs/DECISIONS.md has ${lines} lines`);
  });

  it('when the performance page is read, then docs/PERFORMANCE.md has at most 150 lines', () => {
    const lines = lineCount('docs/PERFORMANCE.md');
    assert.ok(lines <= 150, `docs/PERFORMANCE.md has ${lines} lines`);
  });

  it('when the README is read, then it opens with a table of contents whose every entry is a heading of the page', () => {
    const readme = text('README.md');
    const contents = /^## Contents\n\n((?:\s*[-*] .*\n)+)/m.exec(readme)?.[1];
    assert.ok(contents, 'README.md has a "## Contents" list');
    const entries = [...contents.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    assert.ok(entries.length >= 6, `the contents list its sections: ${entries.join(', ')}`);
    const headings = anchors(readme);
    for (const entry of entries) assert.ok(headings.has(entry), `#${entry} is no heading of README.md (${[...headings].join(', ')})`);
    const sections = [...prose(readme).matchAll(/^## (.+)$/gm)].map((m) => m[1]!).filter((h) => h !== 'Contents');
    const listed = new Set(entries);
    for (const section of sections)
      assert.ok(
        [...anchors(`## ${section}`)].some((a) => listed.has(a)),
        `the contents list "${section}"`,
      );
  });

  it('when a page links to another page of the project (or to a heading), then that file and heading exist', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const target of links(text(page))) {
        if (/^[a-z]+:/i.test(target)) continue; // http:, https:, mailto:
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path ? relative(projectPath('.'), join(dirname(projectPath(page)), path)) : page;
        if (!existsSync(projectPath(file))) broken.push(`${page}: ${target} (no file ${file})`);
        else if (anchor && file.endsWith('.md') && !anchors(text(file)).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor} in ${file})`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('when the README and docs/ are read, then none points outside the project (the shared folder, the specification document or its sections)', () => {
    // The character class keeps this file itself out of a plain-text search for the name.
    for (const page of pages) assert.doesNotMatch(text(page), /\.\.\/shared|S[P]EC\.md|S[P]EC §/, page);
  });

  it('when the source, tests, bench and scripts are read, then no comment points to the specification document', () => {
    const files = (dir: string): string[] =>
      readdirSync(projectPath(dir), { withFileTypes: true }).flatMap((entry) => {
        const path = join(dir, entry.name);
        return entry.isDirectory() ? files(path) : /\.(ts|mjs|js)$/.test(entry.name) ? [path] : [];
      });
    const citing = ['src', 'test', 'bench', 'scripts']
      .flatMap(files)
      .filter((file) => /\bS[P]EC\b|\.\.\/shared/.test(readFileSync(projectPath(file), 'utf8')));
    assert.deepEqual(citing, []);
  });
});
