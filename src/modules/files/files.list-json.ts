/**
 * A folder's listing rendered straight to its JSON text: the same bytes as
 * `JSON.stringify(fileList(entries))` (files.transformer.ts), built as one
 * string per entry instead of two objects per entry that Fastify then walks.
 * A folder of 100,000 files spent about as long in that object tree and its
 * serialisation as in the 100,000 lstats (docs/PERFORMANCE.md "Files").
 *
 * A large folder is rendered in slices of SLICE entries, each turned into
 * bytes at once: the strings of a slice die young (a cheap scavenge), where
 * one 27 MB string of 100,000 entries outlived the young generation and cost
 * twice the time in collection; and the first bytes leave while the rest is
 * rendered.
 */
import type { VolumeEntry } from '../../daemon/daemon.js';
import { isoDate } from '../../http/dates.js';
import { mimetypeOf, modeBits, modeString } from './files.transformer.js';

/** `"mode":…,"mode_bits":…` of a mode; a folder's entries share a handful of modes. */
const modeFields = new Map<number, string>();

function modeFieldsOf(mode: number): string {
  let fields = modeFields.get(mode);
  if (fields === undefined) {
    fields = `"mode":${JSON.stringify(modeString(mode))},"mode_bits":${JSON.stringify(modeBits(mode))}`;
    // Bounded: type bits and permission bits give at most a few thousand distinct values.
    if (modeFields.size < 4096) modeFields.set(mode, fields);
  }
  return fields;
}

/** The last rendered instant: a folder's files were mostly made in the same few seconds. */
let lastMs = Number.NaN;
let lastDate = '';

function dateJson(date: Date): string {
  const ms = date.getTime();
  if (ms !== lastMs) {
    lastDate = `"${isoDate(ms)}"`;
    lastMs = ms;
  }
  return lastDate;
}

function entryJson(entry: VolumeEntry): string {
  return (
    `{"object":"file_object","attributes":{"name":${JSON.stringify(entry.name)},${modeFieldsOf(entry.mode)},` +
    `"size":${entry.size},"is_file":${entry.isFile},"is_symlink":${entry.isSymlink},` +
    `"mimetype":${JSON.stringify(mimetypeOf(entry))},"created_at":${dateJson(entry.createdAt)},` +
    `"modified_at":${dateJson(entry.modifiedAt)}}}`
  );
}

const byName = (a: VolumeEntry, b: VolumeEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** Entries per rendered slice. */
export const SLICE = 1000;

/** Wings' order: folders first, then everything else, each by name (UTF-16 order, as before). */
function inWingsOrder(entries: readonly VolumeEntry[]): VolumeEntry[] {
  const folders: VolumeEntry[] = [];
  const others: VolumeEntry[] = [];
  for (const entry of entries) (entry.isDirectory ? folders : others).push(entry);
  folders.sort(byName);
  others.sort(byName);
  for (const entry of others) folders.push(entry);
  return folders;
}

function sliceJson(sorted: readonly VolumeEntry[], from: number, to: number): string {
  const parts = new Array<string>(to - from);
  for (let i = from; i < to; i++) parts[i - from] = entryJson(sorted[i]!);
  return parts.join(',');
}

/** docs/reference/files-and-sftp.md's list envelope of `entries` in Wings' order, as one JSON text (a folder of at most a slice). */
export function fileListJson(entries: readonly VolumeEntry[]): string {
  const sorted = inWingsOrder(entries);
  return `{"object":"list","data":[${sliceJson(sorted, 0, sorted.length)}]}`;
}

/** The same text as fileListJson, as UTF-8 bytes, a slice at a time. */
export function* fileListJsonChunks(entries: readonly VolumeEntry[]): Generator<Buffer> {
  const sorted = inWingsOrder(entries);
  let text = '{"object":"list","data":[';
  for (let from = 0; from < sorted.length; from += SLICE) {
    const to = Math.min(from + SLICE, sorted.length);
    text += `${from > 0 ? ',' : ''}${sliceJson(sorted, from, to)}`;
    if (to < sorted.length) {
      yield Buffer.from(text);
      text = '';
    }
  }
  yield Buffer.from(`${text}]}`);
}
