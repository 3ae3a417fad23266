/**
 * Giving a volume to a server's uid (volume-owner.ts, docs/reference/containment.md): the whole
 * tree, links never followed, and the volume's own folder last, so that a
 * walk cut short (a SIGKILL of the service, or here an entry the kernel
 * refuses to change) leaves the root with its old owner and the next prepare,
 * seeing that, gives the whole tree again. Needs root (chown, chattr).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chownTree, ownedBy } from '../../../../src/daemon/local/volume/volume-owner.js';

const OLD_UID = 988;
const NEW_UID = 200_000 + Math.floor(Math.random() * 90_000);

let root: string;
let volume: string;

beforeEach(() => {
  if (process.getuid?.() !== 0) throw new Error('these tests need root (chown)');
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-owner-'));
  volume = path.join(root, 'volume');
  fs.mkdirSync(path.join(volume, 'world', 'region'), { recursive: true });
  fs.writeFileSync(path.join(volume, 'world', 'region', 'r.0.0.mca'), 'chunk');
  fs.writeFileSync(path.join(volume, 'stuck.txt'), 'immutable for a while');
  fs.symlinkSync(path.join(root, 'outside.txt'), path.join(volume, 'link-out'));
  fs.writeFileSync(path.join(root, 'outside.txt'), 'the host');
  for (const entry of ['', 'world', 'world/region', 'world/region/r.0.0.mca', 'stuck.txt', 'link-out'])
    fs.lchownSync(path.join(volume, entry), OLD_UID, OLD_UID);
});

afterEach(() => {
  execFileSync('chattr', ['-i', path.join(volume, 'stuck.txt')]);
  fs.rmSync(root, { recursive: true, force: true });
});

describe('chownTree', () => {
  it('gives the root last: cut short, the root keeps its old owner; run again, it finishes the tree', async () => {
    // The kernel refuses to change an immutable file's owner, even root's: the walk stops part way, as a SIGKILL would stop it.
    execFileSync('chattr', ['+i', path.join(volume, 'stuck.txt')]);
    await expect(chownTree(volume, NEW_UID, NEW_UID)).rejects.toMatchObject({ code: 'EPERM' });
    expect(ownedBy(volume, NEW_UID)).toBe(false);
    expect(fs.lstatSync(volume).uid).toBe(OLD_UID);

    execFileSync('chattr', ['-i', path.join(volume, 'stuck.txt')]);
    expect(await chownTree(volume, NEW_UID, NEW_UID)).toBe(6);
    expect(ownedBy(volume, NEW_UID)).toBe(true);
    for (const entry of ['', 'world', 'world/region', 'world/region/r.0.0.mca', 'stuck.txt', 'link-out'])
      expect(fs.lstatSync(path.join(volume, entry)).uid, entry || 'the volume').toBe(NEW_UID);
    expect(fs.statSync(path.join(root, 'outside.txt')).uid).toBe(0);
  });
});
