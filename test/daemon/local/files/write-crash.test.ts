/**
 * SIGKILL mid-write (docs/reference/files-and-sftp.md): a real service process writing a file
 * through LocalFiles is killed at many instants, from the first chunk to the
 * rename. The target always holds the old bytes or the new ones, never a
 * mix; at most one temporary file is left, and a listing by the next
 * service start removes it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalFiles } from '../../../../src/daemon/local/files/local-files.js';
import { makeFilesSandbox, type FilesSandbox } from './helpers.js';

const CHILD = fileURLToPath(new URL('./write-child.ts', import.meta.url));
const CHUNKS = 64;
const CHUNK_BYTES = 256 * 1024;
const OLD = 'old contents\n'.repeat(1000);

let box: FilesSandbox;
beforeEach(() => {
  box = makeFilesSandbox();
  fs.writeFileSync(path.join(box.volume, 'target.bin'), OLD);
});
afterEach(() => box.cleanup());

/** Starts the writer and SIGKILLs it once it has printed `killAt` (a chunk number, or `done` never reached). */
async function killDuringWrite(killAt: number): Promise<'killed' | 'finished'> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', CHILD, box.volumes, box.server.uuid, String(CHUNKS), String(CHUNK_BYTES)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let output = '';
  let finished = false;
  child.stdout!.on('data', (data: Buffer) => {
    output += data.toString();
    if (output.includes('done')) finished = true;
    if (output.includes(`chunk ${killAt}\n`) && child.exitCode === null) child.kill('SIGKILL');
  });
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  if (signal === 'SIGKILL') return 'killed';
  expect([code, finished]).toEqual([0, true]);
  return 'finished';
}

function targetState(): 'old' | 'new' {
  const bytes = fs.readFileSync(path.join(box.volume, 'target.bin'));
  if (bytes.toString() === OLD) return 'old';
  expect(bytes.length).toBe(CHUNKS * CHUNK_BYTES);
  expect(bytes.every((b) => b === 'n'.charCodeAt(0))).toBe(true);
  return 'new';
}

function temporaries(): string[] {
  return fs.readdirSync(box.volume).filter((name) => name.startsWith('.quetzal-upload-'));
}

describe('a SIGKILL while a file is written', () => {
  it(
    'leaves the old file or the new one, plus at most one temporary, swept by the next listing',
    { timeout: 120_000 },
    async () => {
      const outcomes: string[] = [];
      // Early, middle, at the last chunk (fsync and rename run then) and past it.
      for (const killAt of [1, 2, 16, 32, 48, 63, CHUNKS, CHUNKS]) {
        const how = await killDuringWrite(killAt);
        const state = targetState();
        const left = temporaries();
        expect(left.length).toBeLessThanOrEqual(1);
        outcomes.push(`${killAt}:${how}:${state}:${left.length}`);
        if (state === 'new') fs.writeFileSync(path.join(box.volume, 'target.bin'), OLD);
        // The next service start: the temporary predates it and goes at the first listing of its folder.
        await new Promise((resolve) => setTimeout(resolve, 10));
        const restarted = new LocalFiles({
          volumeDir: () => box.volume,
          backupPath: () => '',
          ownerOf: () => undefined,
          volumeUsage: async () => ({ bytes: 0, inodes: 0 }),
        });
        expect((await restarted.list(box.server, '/')).map((e) => e.name)).toEqual(['target.bin']);
        expect(temporaries()).toEqual([]);
      }
      // Killed mid-stream, the old file stays; the write was really cut short at least once with a temporary left.
      expect(outcomes.filter((o) => o.startsWith('1:killed:old'))).toHaveLength(1);
      expect(outcomes.some((o) => o.endsWith(':1'))).toBe(true);
    },
  );
});
