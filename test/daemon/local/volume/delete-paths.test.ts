import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteVolumePaths } from '../../../../src/daemon/local/volume/delete-paths.js';

let root: string;
let volume: string;
let outside: string;

function write(relative: string, content = relative): void {
  const file = path.join(volume, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

function volumeEntries(): string[] {
  return (fs.readdirSync(volume, { recursive: true }) as string[]).sort();
}

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-delete-'));
  volume = path.join(root, 'volume');
  outside = path.join(root, 'outside');
  fs.mkdirSync(volume);
  fs.mkdirSync(path.join(outside, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  fs.writeFileSync(path.join(outside, 'sub', 'deep.txt'), 'deep');
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function outsideUntouched(): void {
  expect((fs.readdirSync(outside, { recursive: true }) as string[]).sort()).toEqual(['secret.txt', 'sub', 'sub/deep.txt']);
}

describe('deleteVolumePaths', () => {
  it('deletes files and whole folders, skips what is not there', async () => {
    write('a.txt');
    write('logs/old/1.log');
    write('logs/keep.log');
    write('cache/x/y/z.bin');
    await deleteVolumePaths(volume, ['a.txt', 'logs/old', 'cache', 'absent.txt', 'absent/deeper.txt', 'a.txt/below']);
    expect(volumeEntries()).toEqual(['logs', 'logs/keep.log']);
  });

  it('accepts ./, doubled and backslash separators as today', async () => {
    write('dir/sub/file.txt');
    write('dir/other.txt');
    await deleteVolumePaths(volume, ['./dir//sub/file.txt', 'dir\\other.txt']);
    expect(volumeEntries()).toEqual(['dir', 'dir/sub']);
  });

  it.each(['/etc/passwd', '../outside/secret.txt', 'dir/../../outside', '.', '', '/'])('refuses %j', async (target) => {
    write('dir/file.txt');
    await expect(deleteVolumePaths(volume, [target])).rejects.toThrow(/is not a path inside the server's volume/);
    expect(volumeEntries()).toEqual(['dir', 'dir/file.txt']);
    outsideUntouched();
  });

  it('removes a final link itself, never what it points to', async () => {
    fs.symlinkSync(outside, path.join(volume, 'to-outside'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(volume, 'to-secret'));
    await deleteVolumePaths(volume, ['to-outside', 'to-secret']);
    expect(volumeEntries()).toEqual([]);
    outsideUntouched();
  });

  it('refuses a path through a link, even one that points inside the volume', async () => {
    fs.symlinkSync(outside, path.join(volume, 'to-outside'));
    write('real/file.txt');
    fs.symlinkSync('real', path.join(volume, 'to-real'));
    await expect(deleteVolumePaths(volume, ['to-outside/secret.txt'])).rejects.toThrow(
      /"to-outside\/secret.txt" passes through a symlink; it is not deleted/,
    );
    await expect(deleteVolumePaths(volume, ['to-outside/sub/deep.txt'])).rejects.toThrow(/passes through a symlink/);
    await expect(deleteVolumePaths(volume, ['to-real/file.txt'])).rejects.toThrow(/passes through a symlink/);
    expect(fs.readdirSync(volume).sort()).toEqual(['real', 'to-outside', 'to-real']);
    expect(fs.readFileSync(path.join(volume, 'real', 'file.txt'), 'utf8')).toBe('real/file.txt');
    outsideUntouched();
  });

  it('never crosses a link inside a folder it deletes', async () => {
    write('tree/a/b.txt');
    fs.symlinkSync(outside, path.join(volume, 'tree', 'a', 'link'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(volume, 'tree', 'file-link'));
    await deleteVolumePaths(volume, ['tree']);
    expect(volumeEntries()).toEqual([]);
    outsideUntouched();
  });

  it('refuses a volume that is itself a link', async () => {
    fs.symlinkSync(outside, path.join(root, 'linked-volume'));
    await expect(deleteVolumePaths(path.join(root, 'linked-volume'), ['secret.txt'])).rejects.toThrow(/is not a folder/);
    outsideUntouched();
  });
});
