import { randomUUID } from 'node:crypto';
/**
 * The time-of-check race (docs/reference/backups-and-restores.md#durability, docs/reference/files-and-sftp.md) for every file operation: a hostile
 * process (the server's) swaps a folder of the volume for a symlink to a
 * folder outside, in a tight loop, while each operation runs on paths
 * through that folder, round after round. Nothing outside may be read,
 * listed, created, changed or removed; each operation either does its work
 * inside the volume or is refused.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DaemonServer } from '../../../../src/daemon/daemon.js';
import { LocalFiles } from '../../../../src/daemon/local/files/local-files.js';
import { SMALL_FILES, startLinkSwapper, stopLinkSwapper } from '../../../fixtures/link-swapper.js';
import { tgz } from '../archive/tarballs.js';
import { archiveNames } from '../archive/trees.js';
import { makeFilesSandbox, type FilesSandbox } from './helpers.js';

/** Rounds per operation at least; more (up to MAX_ROUNDS) until the operation has both won and lost the race. */
const ROUNDS = 150;
const MAX_ROUNDS = 3000;
const OUTSIDE_TEXT = 'outside: must survive';

let box: FilesSandbox;
let swapper: ChildProcess | undefined;

beforeEach(async () => {
  box = makeFilesSandbox();
  const victim = path.join(box.volume, 'victim');
  fs.mkdirSync(path.join(victim, 'data'), { recursive: true });
  fs.writeFileSync(path.join(victim, 'file.txt'), 'inside');
  fs.writeFileSync(path.join(victim, 'data', 'keep.txt'), 'inside');
  for (const name of SMALL_FILES) fs.writeFileSync(path.join(victim, name), 'inside');
  fs.mkdirSync(path.join(box.outside, 'data'), { recursive: true });
  fs.writeFileSync(path.join(box.outside, 'file.txt'), OUTSIDE_TEXT);
  fs.writeFileSync(path.join(box.outside, 'data', 'keep.txt'), OUTSIDE_TEXT);
  fs.writeFileSync(path.join(box.outside, 'canary.txt'), OUTSIDE_TEXT);
  for (const name of SMALL_FILES) fs.writeFileSync(path.join(box.outside, name), OUTSIDE_TEXT);
  fs.writeFileSync(path.join(box.volume, 'pack.tar.gz'), tgz([{ name: 'unpacked.txt', body: 'from the archive' }]));
  fs.writeFileSync(path.join(box.volume, 'data-pack.tar.gz'), tgz([{ name: 'data/unpacked.txt', body: 'from the archive' }]));
});

afterEach(async () => {
  await stopLinkSwapper(swapper);
  swapper = undefined;
  box.cleanup();
});

/** Every entry outside with its type, mode, owner and contents. */
function outsideSnapshot(): string {
  const entries = (fs.readdirSync(box.outside, { recursive: true }) as string[]).sort().map((name) => {
    const full = path.join(box.outside, name);
    const stat = fs.lstatSync(full);
    return [name, stat.mode, stat.uid, stat.isFile() ? fs.readFileSync(full, 'utf8') : ''];
  });
  return JSON.stringify(entries);
}

/** Runs `operation` round after round with the swapper running: refusals (VolumeFileError) are fine, any other error is not. */
async function race(
  operation: (files: LocalFiles, server: DaemonServer, round: number) => Promise<void>,
): Promise<{ done: number; refused: number }> {
  const before = outsideSnapshot();
  swapper = await startLinkSwapper(box.volume, box.outside);
  let done = 0;
  let refused = 0;
  let round = 0;
  for (; round < ROUNDS || ((done === 0 || refused === 0) && round < MAX_ROUNDS); round++) {
    try {
      await operation(box.files, box.server, round);
      done++;
    } catch (err) {
      if (typeof (err as { kind?: unknown }).kind !== 'string') throw err;
      refused++;
    }
  }
  await stopLinkSwapper(swapper);
  swapper = undefined;
  expect(outsideSnapshot()).toBe(before);
  // Either side of the race may win any one operation; over the rounds both must have happened for the test to mean anything.
  expect(done + refused).toBe(round);
  return { done, refused };
}

/**
 * Both operations make missing folders: caught between the swapper's two
 * renames, they make a fresh `victim`, which jams the swapper (its folder
 * cannot move back). Removing ours lets it go on swapping.
 */
function healSwapper(): void {
  const victim = path.join(box.volume, 'victim');
  if (!fs.existsSync(path.join(box.volume, 'victim.real'))) return;
  if (!fs.lstatSync(victim, { throwIfNoEntry: false })?.isDirectory()) return;
  // Moved aside first, then removed there: a recursive rm of `victim` itself walks it by path, and
  // once the swapper put its link in that path mid-walk, it removed files outside (seen once in CI).
  const aside = path.join(box.volume, `victim.heal-${randomUUID()}`);
  try {
    fs.renameSync(victim, aside);
  } catch {
    return; // The swapper moved things meanwhile: the next round looks again.
  }
  if (fs.lstatSync(aside).isSymbolicLink()) {
    // The swapper's link, not our folder: it goes back where the swapper expects it (if it can).
    try {
      fs.renameSync(aside, victim);
    } catch {
      fs.unlinkSync(aside);
    }
    return;
  }
  fs.rmSync(aside, { recursive: true, force: true });
}

const everyWay = (outcome: { done: number; refused: number }) => {
  expect(outcome.done).toBeGreaterThan(0);
  expect(outcome.refused).toBeGreaterThan(0);
};

describe(`a folder swapped for a link to outside, at least ${ROUNDS} rounds per operation`, () => {
  it('list never lists outside', { timeout: 60_000 }, async () => {
    everyWay(
      await race(async (files, server) => {
        const names = (await files.list(server, 'victim')).map((e) => e.name);
        expect(names).not.toContain('canary.txt');
      }),
    );
  });

  it('stat never sees outside', { timeout: 60_000 }, async () => {
    const outcome = await race(async (files, server) => {
      await files.stat(server, 'victim/canary.txt');
      throw new Error('stat saw a file that is only outside');
    });
    expect(outcome.done).toBe(0);
  });

  it('readFile and openRead never read outside', { timeout: 60_000 }, async () => {
    everyWay(
      await race(async (files, server, round) => {
        const name = round % 2 === 0 ? 'victim/file.txt' : `victim/${SMALL_FILES[round % SMALL_FILES.length]}`;
        expect((await files.readFile(server, name, 1000)).toString()).toBe('inside');
        const { stream } = await files.openRead(server, 'victim/data/keep.txt');
        expect(await text(stream)).toBe('inside');
      }),
    );
  });

  it('writeFile and createFolder never create outside', { timeout: 60_000 }, async () => {
    everyWay(
      await race(async (files, server, round) => {
        try {
          await files.writeFile(server, `victim/data/new-${round}.txt`, Buffer.from('new'));
          await files.createFolder(server, `victim/folder-${round}`);
        } finally {
          healSwapper();
        }
      }),
    );
  });

  it('rename and copy never move or copy outside', { timeout: 60_000 }, async () => {
    everyWay(
      await race(async (files, server, round) => {
        await files.copy(server, 'victim/file.txt');
        await files.rename(server, `victim/${SMALL_FILES[round % SMALL_FILES.length]}`, `moved-${round}.txt`);
      }),
    );
  });

  it('delete never deletes outside', { timeout: 60_000 }, async () => {
    everyWay(
      await race(async (files, server, round) => {
        await files.delete(server, [round % 2 ? 'victim/file.txt' : 'victim/data']);
      }),
    );
  });

  it('chmod never changes outside', { timeout: 60_000 }, async () => {
    everyWay(
      await race(async (files, server, round) => {
        await files.chmod(server, round % 2 ? 'victim/file.txt' : 'victim/data', round % 2 ? 0o600 : 0o700);
      }),
    );
  });

  it('compress never archives outside', { timeout: 60_000 }, async () => {
    everyWay(
      await race(async (files, server, round) => {
        if (round % 2) {
          // Into the swapped folder: refused when it is a link, never made outside (the snapshot says).
          await files.compress(server, 'victim', ['file.txt', 'data']);
          return;
        }
        const made = await files.compress(server, '/', ['victim']);
        const archive = path.join(box.volume, made.path);
        for (const entry of archiveNames(archive)) expect(entry.path).not.toContain('canary');
        fs.rmSync(archive);
      }),
    );
  });

  it('decompress never unpacks outside', { timeout: 60_000 }, async () => {
    everyWay(
      await race(async (files, server, round) => {
        await files.decompress(server, 'victim', round % 2 ? 'pack.tar.gz' : 'data-pack.tar.gz');
      }),
    );
  });

  it('SFTP open never opens outside', { timeout: 60_000 }, async () => {
    const write = { read: false, write: true, append: false, create: true, truncate: false, exclusive: false };
    everyWay(
      await race(async (files, server, round) => {
        const reading = await files.open(server, 'victim/file.txt', { ...write, write: false, create: false, read: true });
        const buffer = Buffer.alloc(100);
        const length = await reading.read(buffer, 0);
        await reading.close();
        expect(buffer.subarray(0, length).toString()).toBe('inside');
        const writing = await files.open(server, `victim/data/sftp-${round}.txt`, write);
        await writing.write(Buffer.from('sftp'), 0);
        await writing.close();
      }),
    );
  });
});
