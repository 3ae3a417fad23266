import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../platform/service-process.js';

/**
 * The Files section's cost to the console's first load (issue 19 part 4):
 * CodeMirror and its grammars are in chunks of their own, fetched by the
 * editor page, never by index.html, and the initial JavaScript stays within
 * the console's budget (bench/console.ts: ≤ 200 KB gzipped).
 */

const BUDGET_KB = 200;
const out = path.join(ROOT, 'test-results', `files-bundle-${process.pid}`);
const dir = path.join(out, 'console');
let initial: string[];
let lazy: string[];
const read = (file: string) => fs.readFileSync(path.join(dir, file), 'utf8');

beforeAll(() => {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.js'), '--console-only', '--outdir', out], { cwd: ROOT });
  const html = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
  initial = [...html.matchAll(/(?:src|href)="\/([^"]+\.js)"/g)].map((match) => match[1]!);
  lazy = fs.readdirSync(dir).filter((file) => file.endsWith('.js') && !initial.includes(file));
}, 60_000);

afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

describe('the Files section in the console build', () => {
  it('keeps CodeMirror out of the initial JavaScript, which stays within its budget', () => {
    expect(initial.length).toBeGreaterThan(0);
    // CodeMirror's own class names: present in its chunk, absent from what index.html loads.
    const isCodeMirror = (file: string) => read(file).includes('cm-content') && read(file).includes('cm-gutters');
    expect(initial.filter(isCodeMirror)).toEqual([]);
    expect(lazy.filter(isCodeMirror).length).toBe(1);
    const gzipped = initial.reduce(
      (sum, file) => sum + zlib.gzipSync(fs.readFileSync(path.join(dir, file)), { level: 9 }).length,
      0,
    );
    console.log(`initial JavaScript: ${(gzipped / 1024).toFixed(1)} KB gzipped in ${initial.length} files`);
    expect(gzipped / 1024).toBeLessThanOrEqual(BUDGET_KB);
  });

  it('browsing a folder fetches no CodeMirror: the folder view and what it imports statically hold none of it', () => {
    const staticImports = (file: string): string[] =>
      [...read(file).matchAll(/from"\.\/([^"]+\.js)"/g)].map((match) => match[1]!);
    const folderView = lazy.filter((file) => read(file).includes('Rename or move'));
    expect(folderView.length).toBe(1);
    const reached = new Set<string>();
    const visit = (file: string) => {
      for (const next of staticImports(file)) if (!reached.has(next) && reached.add(next)) visit(next);
    };
    visit(folderView[0]!);
    expect([...reached].filter((file) => read(file).includes('cm-gutters'))).toEqual([]);
  });

  it('loads each language with the file that needs it: the YAML grammar is not in the editor chunk', () => {
    const editor = lazy.find((file) => read(file).includes('cm-gutters'))!;
    const yaml = lazy.filter((file) => /yaml/i.test(read(file)) && read(file).includes('BlockMapping'));
    expect(yaml.length).toBeGreaterThan(0);
    expect(yaml).not.toContain(editor);
  });
});
