/** Trees on disk for the archive tests: made, and looked at without ever following a symlink. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { list as listTar } from 'tar';

export function sha1(data: Buffer): string {
  return createHash('sha1').update(data).digest('hex');
}

/** Every path under `dir` with its type, mode and content (and, with `mtimes`, each file's mtime). */
export function snapshot(dir: string, { mtimes = true }: { mtimes?: boolean } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (absolute: string, relative: string) => {
    for (const name of fs.readdirSync(absolute).sort()) {
      const child = path.join(absolute, name);
      const rel = relative === '' ? name : `${relative}/${name}`;
      const stat = fs.lstatSync(child);
      const mode = (stat.mode & 0o7777).toString(8);
      if (stat.isDirectory()) {
        out[`${rel}/`] = `dir ${mode}`;
        walk(child, rel);
      } else if (stat.isSymbolicLink()) {
        out[rel] = `symlink -> ${fs.readlinkSync(child)}`;
      } else if (stat.isFile()) {
        const content = fs.readFileSync(child);
        const shown = content.length <= 64 ? JSON.stringify(content.toString('utf8')) : `sha1:${sha1(content)}`;
        out[rel] = `file ${mode} ${shown}${mtimes ? ` @${stat.mtimeMs}` : ''}`;
      } else {
        out[rel] = 'special';
      }
    }
  };
  walk(dir, '');
  return out;
}

export function write(file: string, content: string | Buffer, mode?: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
  if (mode !== undefined) fs.chmodSync(file, mode);
}

export function archiveNames(archivePath: string): Array<{ path: string; type: string }> {
  const entries: Array<{ path: string; type: string }> = [];
  listTar({ file: archivePath, sync: true, onReadEntry: (entry) => entries.push({ path: entry.path, type: entry.type }) });
  return entries;
}

/** The folders every archive test starts from. */
export interface ArchiveSandbox {
  root: string;
  /** The server's volume: a.txt, dir/b.txt, keep.txt. */
  volume: string;
  /** Beside the volume: outside/secret.txt, which no restore may touch. */
  outside: string;
  backups: string;
}

export function makeArchiveSandbox(): ArchiveSandbox {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-archive-'));
  const volume = path.join(root, 'volume');
  const outside = path.join(root, 'outside');
  const backups = path.join(root, 'backups');
  fs.mkdirSync(backups);
  write(path.join(outside, 'secret.txt'), 'outside secret');
  write(path.join(volume, 'a.txt'), 'original a');
  write(path.join(volume, 'dir', 'b.txt'), 'original b');
  write(path.join(volume, 'keep.txt'), 'kept');
  return { root, volume, outside, backups };
}
