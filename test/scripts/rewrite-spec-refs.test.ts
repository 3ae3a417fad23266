import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script, no type declarations
import { readMap, rewrite } from '../../scripts/rewrite-spec-refs.mjs';

/** docs/reference/SPEC-MAP.md and the script that rewrites the old citations with it. */
const ROOT = path.resolve(import.meta.dirname, '../..');
const REFERENCE = path.join(ROOT, 'docs', 'reference');
const map = readMap() as { sections: Map<string, string>; contract: Map<string, string> };

/** GitHub's anchor for a heading. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');

describe('SPEC-MAP.md', () => {
  it('points every section at a file and heading that exist', () => {
    expect(map.sections.size).toBeGreaterThanOrEqual(17);
    for (const target of [...map.sections.values(), ...map.contract.values()]) {
      const [file, hash] = target.replace(/^docs\/reference\//, '').split('#');
      const text = fs.readFileSync(path.join(REFERENCE, file!), 'utf8');
      if (hash) {
        const anchors = [...text.matchAll(/^#+ (.+)$/gm)].map((m) => anchor(m[1]!));
        expect(anchors, target).toContain(hash);
      }
    }
  });

  it('rewrites single citations, lists, and CONTRACT by folder', () => {
    const { text, count } = rewrite(
      '// SPEC 13 and (SPEC 1.2, 5 and 6); SPEC 10, 30 s; SPEC 9.9; CONTRACT.md "Admin command line"; CONTRACT.md',
      'src/http/x.ts',
      map,
    );
    expect(text).toBe(
      '// docs/reference/network-and-allocations.md and (docs/reference/api.md#errors, docs/reference/authentication.md and docs/reference/servers.md#status); ' +
        'docs/reference/containment.md, 30 s; docs/reference/backups-and-restores.md#durability; docs/reference/cli.md; docs/reference/configuration.md',
    );
    expect(count).toBe(6);
    expect(rewrite('(CONTRACT.md)', 'test/cli/x.test.ts', map).text).toBe('(docs/reference/cli.md)');
    expect(() => rewrite('SPEC 99', 'src/x.ts', map)).toThrow(/SPEC 99 is not in/);
  });

  it('writes a Markdown file’s citations as links relative to it', () => {
    expect(rewrite('(SPEC 13); SPEC 1.2 and CONTRACT.md', 'docs/SFTP.md', map).text).toBe(
      '([network-and-allocations](reference/network-and-allocations.md)); [api#errors](reference/api.md#errors) and [configuration](reference/configuration.md)',
    );
    expect(rewrite('SPEC 13', 'README.md', map).text).toBe(
      '[network-and-allocations](docs/reference/network-and-allocations.md)',
    );
  });
});
