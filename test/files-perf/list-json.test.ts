/**
 * The listing's hand-built JSON (files.list-json.ts) is byte for byte what
 * the object transformer serialised by JSON.stringify gives, for every kind
 * of entry and names that need escaping, in Wings' order.
 */
import { describe, expect, it } from 'vitest';
import type { VolumeEntry } from '../../src/daemon/daemon.js';
import { fileListJson, fileListJsonChunks, SLICE } from '../../src/modules/files/files.list-json.js';
import { fileList } from '../../src/modules/files/files.transformer.js';

function entry(name: string, kind: 'file' | 'dir' | 'link', mode: number, size: number, ms: number): VolumeEntry {
  const type = kind === 'dir' ? 0o040000 : kind === 'link' ? 0o120000 : 0o100000;
  return {
    name,
    mode: type | mode,
    size,
    isFile: kind === 'file',
    isDirectory: kind === 'dir',
    isSymlink: kind === 'link',
    createdAt: new Date(ms - 86_400_000 * 3 - 1234),
    modifiedAt: new Date(ms),
  };
}

describe('fileListJson', () => {
  it('equals JSON.stringify of the transformed list, names escaped, folders first, by name', () => {
    const names = [
      'server.properties',
      'world',
      'a "quoted" name.txt',
      'back\\slash.yml',
      'tab\there.log',
      'new\nline.json',
      'ctrl\u0001\u001f.bin',
      'ünïcödé.TXT',
      'emoji-😀.png',
      'lone-\ud800-surrogate.jar',
      'Zeta.GZ',
      'noext',
      '.hidden',
      'archive.tar',
      'photo.JPEG',
    ];
    const entries = names.flatMap((name, i) => [
      entry(
        name,
        (['file', 'dir', 'link'] as const)[i % 3]!,
        [0o644, 0o755, 0o600, 0o777, 0o4755][i % 5]!,
        i * 1000,
        1_764_000_000_000 + i * 37_000_123,
      ),
      entry(`${name}-2`, 'file', 0o640, 2 ** 40 + i, 1_000_000_000 + i),
    ]);
    const ours = fileListJson(entries);
    expect(ours).toBe(JSON.stringify(fileList(entries)));
    const parsed = JSON.parse(ours) as { data: { attributes: { name: string; is_file: boolean } }[] };
    expect(parsed.data).toHaveLength(entries.length);
  });

  it('renders an empty folder as an empty list', () => {
    expect(fileListJson([])).toBe('{"object":"list","data":[]}');
    expect(Buffer.concat([...fileListJsonChunks([])]).toString()).toBe('{"object":"list","data":[]}');
  });

  it('streams a large folder in slices whose bytes are the same JSON, in order across slices', () => {
    for (const count of [SLICE, SLICE + 1, 2 * SLICE, 2 * SLICE + 7]) {
      // Names shuffled, folders among them, some non-ASCII (UTF-8 of several bytes).
      const entries = Array.from({ length: count }, (_, i) => {
        const n = (i * 7919) % count;
        return entry(n % 3 === 0 ? `é-${n}` : `f-${n}`, n % 10 === 0 ? 'dir' : 'file', 0o644, n, 1_764_000_000_000 + n);
      });
      const chunks = [...fileListJsonChunks(entries)];
      expect(chunks.length).toBe(Math.ceil(count / SLICE));
      expect(Buffer.concat(chunks).toString('utf8')).toBe(JSON.stringify(fileList(entries)));
    }
  });
});
