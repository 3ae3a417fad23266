import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SafeDir, assertSafeDirSupported } from '../../../../src/daemon/local/volume/safe-dir.js';

let root: string;
let volume: string;
let outside: string;
const held: SafeDir[] = [];

function hold(dir: SafeDir): SafeDir {
  held.push(dir);
  return dir;
}

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-safedir-'));
  volume = path.join(root, 'volume');
  outside = path.join(root, 'outside');
  fs.mkdirSync(path.join(volume, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(volume, 'sub', 'inside.txt'), 'inside');
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  // A link where a folder could be: every operation must treat it as a link, never as the folder it points to.
  fs.symlinkSync(outside, path.join(volume, 'link'));
});

afterEach(() => {
  for (const dir of held.splice(0)) dir.close();
  fs.rmSync(root, { recursive: true, force: true });
});

function outsideUntouched(): void {
  expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
  expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret');
}

describe('SafeDir refuses to follow a link planted where a folder was', () => {
  it('open refuses a root that is a link', () => {
    expect(() => SafeDir.open(path.join(volume, 'link'))).toThrow(
      /volume\/link is not a folder \(a symlink or a file\), refused \(ENOTDIR\)/,
    );
  });

  it('openDir and tryOpenDir refuse a link, and a file', () => {
    const dir = hold(SafeDir.open(volume));
    expect(() => dir.openDir('link')).toThrow(/volume\/link is not a folder \(a symlink or a file\), refused \(ENOTDIR\)/);
    expect(() => dir.tryOpenDir('link')).toThrow(/is not a folder/);
    fs.writeFileSync(path.join(volume, 'file'), 'x');
    expect(() => dir.openDir('file')).toThrow(/is not a folder/);
    expect(dir.tryOpenDir('absent')).toBeNull();
    const sub = hold(dir.openDir('sub'));
    expect(sub.list().map((e) => e.name)).toEqual(['inside.txt']);
  });

  it('openDirAsync refuses a link', async () => {
    const dir = hold(SafeDir.open(volume));
    await expect(dir.openDirAsync('link')).rejects.toThrow(/is not a folder/);
    const sub = hold(await dir.openDirAsync('sub'));
    expect((await sub.listAsync()).map((e) => e.name)).toEqual(['inside.txt']);
  });

  it('lstat reports the link itself, and null when absent', () => {
    const dir = hold(SafeDir.open(volume));
    expect(dir.lstat('link')?.isSymbolicLink()).toBe(true);
    expect(dir.lstat('sub')?.isDirectory()).toBe(true);
    expect(dir.lstat('absent')).toBeNull();
  });

  it('openFile adds O_NOFOLLOW: a link to a file outside is not opened, for reading or writing', async () => {
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(volume, 'file-link'));
    const dir = hold(SafeDir.open(volume));
    expect(() => dir.openFile('file-link', fs.constants.O_RDONLY)).toThrow(expect.objectContaining({ code: 'ELOOP' }));
    expect(() => dir.openFile('file-link', fs.constants.O_WRONLY | fs.constants.O_TRUNC)).toThrow(
      expect.objectContaining({ code: 'ELOOP' }),
    );
    await expect(dir.openFileAsync('file-link', fs.constants.O_RDONLY)).rejects.toMatchObject({ code: 'ELOOP' });
    const fd = dir.openFile('new.txt', fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o640);
    fs.writeSync(fd, 'new');
    fs.closeSync(fd);
    expect(fs.readFileSync(path.join(volume, 'new.txt'), 'utf8')).toBe('new');
    outsideUntouched();
  });

  it('mkdir does not create through a link', () => {
    const dir = hold(SafeDir.open(volume));
    expect(() => dir.mkdir('link', 0o755)).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    dir.mkdir('made', 0o750);
    expect(fs.lstatSync(path.join(volume, 'made')).isDirectory()).toBe(true);
    outsideUntouched();
  });

  it('rename moves the link itself, not its target', () => {
    const dir = hold(SafeDir.open(volume));
    const sub = hold(dir.openDir('sub'));
    dir.rename('link', sub, 'moved');
    expect(fs.readlinkSync(path.join(volume, 'sub', 'moved'))).toBe(outside);
    expect(fs.existsSync(path.join(volume, 'link'))).toBe(false);
    outsideUntouched();
  });

  it('unlink removes the link itself, rmdir refuses it', () => {
    const dir = hold(SafeDir.open(volume));
    expect(() => dir.rmdir('link')).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
    dir.unlink('link');
    expect(fs.existsSync(path.join(volume, 'link'))).toBe(false);
    outsideUntouched();
  });

  it('removeTree unlinks links at every depth and never crosses them', async () => {
    fs.symlinkSync(outside, path.join(volume, 'sub', 'deep-link'));
    fs.mkdirSync(path.join(volume, 'sub', 'a', 'b'), { recursive: true });
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(volume, 'sub', 'a', 'b', 'file-link'));
    const dir = hold(SafeDir.open(volume));
    await dir.removeTreeAsync('link');
    await dir.removeTreeAsync('sub');
    await dir.removeTreeAsync('absent');
    expect(fs.readdirSync(volume)).toEqual([]);
    outsideUntouched();
  });

  // As root, permissions stop nothing: the removal runs in a child process as an unprivileged user (CI runs as root).
  it.skipIf(process.getuid?.() !== 0)(
    'removeTree removes folders their owner made unreadable and unwritable, as that owner',
    () => {
      const nobody = 65534;
      fs.chmodSync(root, 0o755);
      fs.mkdirSync(path.join(volume, 'locked', 'inner'), { recursive: true });
      fs.writeFileSync(path.join(volume, 'locked', 'inner', 'f'), 'f');
      for (const entry of ['', 'sub', 'sub/inside.txt', 'locked', 'locked/inner', 'locked/inner/f']) {
        fs.chownSync(path.join(volume, entry), nobody, nobody);
      }
      fs.chmodSync(path.join(volume, 'locked', 'inner'), 0o000);
      fs.chmodSync(path.join(volume, 'locked'), 0o500);
      // The child cannot read the checkout (a clone under a root-only folder, e.g. mktemp -d): it runs
      // safe-dir.ts bundled into a world-readable folder of its own, with no tsx or node_modules to reach.
      const runner = path.join(root, 'runner');
      fs.mkdirSync(runner, { mode: 0o755 });
      fs.chmodSync(runner, 0o755);
      esbuild.buildSync({
        entryPoints: [fileURLToPath(new URL('../../../../src/daemon/local/volume/safe-dir.ts', import.meta.url))],
        bundle: true,
        platform: 'node',
        format: 'esm',
        outfile: path.join(runner, 'safe-dir.mjs'),
        logLevel: 'silent',
      });
      const script = path.join(runner, 'remove-locked.mjs');
      fs.writeFileSync(
        script,
        `import { SafeDir } from './safe-dir.mjs'; const dir = SafeDir.open(${JSON.stringify(volume)}); await dir.removeTreeAsync('locked'); dir.close();\n`,
      );
      for (const file of fs.readdirSync(runner)) fs.chmodSync(path.join(runner, file), 0o644);
      execFileSync(process.execPath, [script], { uid: nobody, gid: nobody, cwd: runner, stdio: 'pipe' });
      expect(fs.existsSync(path.join(volume, 'locked'))).toBe(false);
    },
  );

  it('removeTree removes folders their owner made unreadable and unwritable', async () => {
    fs.mkdirSync(path.join(volume, 'locked', 'inner'), { recursive: true });
    fs.writeFileSync(path.join(volume, 'locked', 'inner', 'f'), 'f');
    fs.chmodSync(path.join(volume, 'locked', 'inner'), 0o000);
    fs.chmodSync(path.join(volume, 'locked'), 0o500);
    const dir = hold(SafeDir.open(volume));
    await dir.removeTreeAsync('locked');
    expect(fs.existsSync(path.join(volume, 'locked'))).toBe(false);
  });

  it('a link swapped in after a folder was opened changes nothing for the held folder', async () => {
    const dir = hold(SafeDir.open(volume));
    const sub = hold(dir.openDir('sub'));
    fs.renameSync(path.join(volume, 'sub'), path.join(root, 'moved-away'));
    fs.symlinkSync(outside, path.join(volume, 'sub'));
    expect(sub.list().map((e) => e.name)).toEqual(['inside.txt']);
    await sub.removeTreeAsync('inside.txt');
    expect(fs.readdirSync(path.join(root, 'moved-away'))).toEqual([]);
    outsideUntouched();
  });
});

describe('SafeDir', () => {
  it('keeps holding a folder after its parent is renamed', () => {
    const dir = hold(SafeDir.open(volume));
    const sub = hold(dir.openDir('sub'));
    fs.renameSync(volume, path.join(root, 'renamed'));
    expect(sub.list().map((e) => e.name)).toEqual(['inside.txt']);
    sub.mkdir('new', 0o755);
    expect(fs.lstatSync(path.join(root, 'renamed', 'sub', 'new')).isDirectory()).toBe(true);
    expect(dir.lstat('sub')?.isDirectory()).toBe(true);
  });

  it('renames between two held folders', () => {
    const dir = hold(SafeDir.open(volume));
    const sub = hold(dir.openDir('sub'));
    sub.rename('inside.txt', dir, 'up.txt');
    expect(fs.readFileSync(path.join(volume, 'up.txt'), 'utf8')).toBe('inside');
  });

  it.each(['', '.', '..', 'a/b', '/abs', '../x', 'x/..', 'nul\0'])('refuses the entry name %j', async (name) => {
    const dir = hold(SafeDir.open(volume));
    expect(() => dir.lstat(name)).toThrow(/not a single entry name/);
    expect(() => dir.openDir(name)).toThrow(/not a single entry name/);
    expect(() => dir.openFile(name, fs.constants.O_RDONLY)).toThrow(/not a single entry name/);
    expect(() => dir.mkdir(name, 0o755)).toThrow(/not a single entry name/);
    expect(() => dir.unlink(name)).toThrow(/not a single entry name/);
    expect(() => dir.rmdir(name)).toThrow(/not a single entry name/);
    await expect(dir.removeTreeAsync(name)).rejects.toThrow(/not a single entry name/);
    expect(() => dir.rename('sub', dir, name)).toThrow(/not a single entry name/);
    expect(() => dir.entryPath(name)).toThrow(/not a single entry name/);
    outsideUntouched();
  });

  it('is supported here (Linux with /proc): the check the service can make at start passes', () => {
    expect(() => assertSafeDirSupported()).not.toThrow();
  });

  it('refuses to be used once closed', () => {
    const dir = SafeDir.open(volume);
    dir.close();
    dir.close();
    expect(() => dir.list()).toThrow(/already closed/);
  });
});
