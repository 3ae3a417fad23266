import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import madge from 'madge';

/**
 * The layout docs/STYLE.md describes, checked: what would otherwise erode one
 * convenient import at a time.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');
const WEB_SRC = path.join(ROOT, 'web', 'src');

function sourceFiles(dir = SRC, pattern = /\.ts$/): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full, pattern);
    return pattern.test(entry.name) ? [full] : [];
  });
}

const relative = (file: string) => path.relative(SRC, file).split(path.sep).join('/');

describe('the source layout', () => {
  it('has no import cycle, and keeps the layers apart', async () => {
    const graph = await madge(SRC, { fileExtensions: ['ts'], tsConfig: path.join(ROOT, 'tsconfig.json') });
    expect(graph.circular()).toEqual([]);

    const imports = graph.obj();
    const crossing = (from: string, to: readonly string[]) =>
      Object.entries(imports).flatMap(([file, deps]) =>
        file.startsWith(from)
          ? deps.filter((dep) => to.some((prefix) => dep.startsWith(prefix))).map((dep) => `${file} → ${dep}`)
          : [],
      );
    // The HTTP layer is given what it needs (ClientResolver); it knows no module, scheduler or daemon.
    expect(crossing('http/', ['modules/', 'scheduler/', 'daemon/local/'])).toEqual([]);
    // The scheduler uses the modules; the modules never use the scheduler (they share src/timing).
    expect(crossing('modules/', ['scheduler/'])).toEqual([]);
    expect(crossing('timing/', ['modules/', 'scheduler/'])).toEqual([]);
    // Only the composition roots pick the local daemon; everyone else sees the Daemon interface.
    const daemonUsers = crossing('', ['daemon/local/']).filter((edge) => !edge.startsWith('daemon/local/'));
    for (const edge of daemonUsers) expect(edge).toMatch(/^(main|cli\/|bootstrap)/);
  });

  it('has no source file over 500 lines', () => {
    const long = sourceFiles()
      .map((file) => ({ file: relative(file), lines: fs.readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > 500);
    expect(long).toEqual([]);
  });

  it('keeps the web console (web/src) free of import cycles and of files over 500 lines', async () => {
    const graph = await madge(WEB_SRC, {
      fileExtensions: ['ts', 'tsx'],
      tsConfig: path.join(ROOT, 'web', 'tsconfig.json'),
    });
    expect(graph.circular()).toEqual([]);
    // madge found the files: an empty graph would pass the cycle check for nothing.
    expect(Object.keys(graph.obj())).toContain('main.tsx');
    const long = sourceFiles(WEB_SRC, /\.tsx?$/)
      .map((file) => ({ file: path.relative(WEB_SRC, file), lines: fs.readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > 500);
    expect(long).toEqual([]);
  });

  it('types requests by their schemas: no casts of body, params or query', () => {
    const casts = sourceFiles().filter((file) => /request\.(body|params|query)\s+as\b/.test(fs.readFileSync(file, 'utf8')));
    expect(casts.map(relative)).toEqual([]);
  });

  it('keeps SQL in repositories', () => {
    const SQL = /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\bsql(<[^>]*>)?`/;
    const allowed = [
      /\.repository\.ts$/,
      // The activity index engine: each planner beside its queries.
      /^modules\/activity\/index-engine\/(.*\.queries|sql-fragments)\.ts$/,
      /^db\//,
      // The PostgreSQL NOTIFY that wakes other schedulers is the channel itself.
      /^timing\/wakeup\.ts$/,
    ];
    const misplaced = sourceFiles()
      .map(relative)
      .filter((file) => !allowed.some((pattern) => pattern.test(file)))
      .filter((file) => SQL.test(fs.readFileSync(path.join(SRC, file), 'utf8')));
    expect(misplaced).toEqual([]);
  });
});
