/**
 * A volume entry as Pterodactyl's FileObjectTransformer renders it (docs/reference/files-and-sftp.md's
 * `file_object`): Wings' `mode` string (`-rw-r--r--`), `mode_bits` (`644`),
 * a mimetype guessed from the name, and Wings' listing order.
 */
import path from 'node:path';
import type { VolumeEntry } from '../../daemon/daemon.js';
import { isoDate } from '../../http/dates.js';
import { item, list } from '../../http/envelopes.js';

const TEXT = 'text/plain; charset=utf-8';
const BINARY = 'application/octet-stream';

/**
 * Extensions whose files are text a person edits on a game server. Wings sniffs
 * the first bytes; Quetzal decides by name alone, so a listing never reads
 * 100,000 files (docs/FILES.md).
 */
const TEXT_EXTENSIONS = new Set(
  (
    'txt log md ini cfg conf config properties yml yaml json json5 toml xml html htm css js mjs cjs ts sh bash ' +
    'bat cmd ps1 py lua java kt sk php rb go rs c h cpp hpp cs sql csv tsv env lang mcmeta mcfunction secret ' +
    'gitignore dockerignore editorconfig service'
  ).split(' '),
);

const TYPED_EXTENSIONS: Record<string, string> = {
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  jar: 'application/java-archive',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  webp: 'image/webp',
  ico: 'image/vnd.microsoft.icon',
  pdf: 'application/pdf',
};

/** The mimetype a listing shows: by type first (folder, link), then by extension; octet-stream when unknown. */
export function mimetypeOf(entry: VolumeEntry): string {
  if (entry.isSymlink) return 'inode/symlink';
  if (entry.isDirectory) return 'inode/directory';
  const name = entry.name.toLowerCase();
  const extension = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : '';
  if (TEXT_EXTENSIONS.has(extension)) return TEXT;
  return TYPED_EXTENSIONS[extension] ?? BINARY;
}

const TYPE_BITS = 0o170000;

/** `ls -l`'s first column, as Wings' (Go's FileMode) prints it for these three types. */
export function modeString(mode: number): string {
  const type = mode & TYPE_BITS;
  const first = type === 0o040000 ? 'd' : type === 0o120000 ? 'l' : '-';
  const letters = 'rwxrwxrwx';
  let out = first;
  for (let bit = 0; bit < 9; bit++) out += mode & (0o400 >> bit) ? letters[bit] : '-';
  return out;
}

/** The permission bits in octal, three digits (`644`), as Wings' `mode_bits`. */
export function modeBits(mode: number): string {
  return (mode & 0o777).toString(8).padStart(3, '0');
}

export function fileAttributes(entry: VolumeEntry) {
  return {
    name: entry.name,
    mode: modeString(entry.mode),
    mode_bits: modeBits(entry.mode),
    size: entry.size,
    is_file: entry.isFile,
    is_symlink: entry.isSymlink,
    mimetype: mimetypeOf(entry),
    created_at: isoDate(entry.createdAt.getTime()),
    modified_at: isoDate(entry.modifiedAt.getTime()),
  };
}

export function fileItem(entry: VolumeEntry) {
  return item('file_object', fileAttributes(entry));
}

/** Wings' order: folders first, then everything else, each by name (byte order, as Go's sort). */
export function fileList(entries: readonly VolumeEntry[]) {
  const sorted = [...entries].sort((a, b) => {
    if (a.isDirectory !== b.isDirectory) return a.isDirectory ? -1 : 1;
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
  return list(sorted.map(fileItem));
}

/** The last part of a volume path (`/a/b.txt` → `b.txt`), for a download's file name. */
export function baseName(file: string): string {
  return path.posix.basename(file) || 'download';
}
