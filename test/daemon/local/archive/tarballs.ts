/** Hand-built tarballs: entries no well-behaved tar tool would write. */
import { gzipSync } from 'node:zlib';

export interface RawEntry {
  name: string;
  /** typeflag: '0' file, '1' hard link, '2' symlink, '3' char device, '4' block device, '5' directory, '6' FIFO */
  type?: string;
  mode?: number;
  body?: string | Buffer;
  linkname?: string;
  /** pax extended header records for this entry (e.g. { path: '../x' }) */
  pax?: Record<string, string>;
  /** a GNU long-name ('L') header carrying this path */
  longName?: string;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

/** One 512-byte ustar header with a correct checksum. */
function ustarHeader(fields: { name: string; type: string; mode: number; size: number; linkname?: string }): Buffer {
  const header = Buffer.alloc(512);
  const name = Buffer.from(fields.name);
  if (name.length > 100) throw new Error(`test name too long: ${fields.name}`);
  name.copy(header, 0);
  header.write(octal(fields.mode, 8), 100, 'ascii');
  header.write(octal(0, 8), 108, 'ascii');
  header.write(octal(0, 8), 116, 'ascii');
  header.write(octal(fields.size, 12), 124, 'ascii');
  header.write(octal(1_700_000_000, 12), 136, 'ascii');
  header.fill(' ', 148, 156);
  header.write(fields.type, 156, 'ascii');
  if (fields.linkname) Buffer.from(fields.linkname).copy(header, 157);
  header.write('ustar\0', 257, 'ascii');
  header.write('00', 263, 'ascii');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return header;
}

function padded(body: Buffer): Buffer[] {
  const rest = body.length % 512;
  return rest === 0 ? [body] : [body, Buffer.alloc(512 - rest)];
}

function paxBody(records: Record<string, string>): Buffer {
  let text = '';
  for (const [key, value] of Object.entries(records)) {
    const line = ` ${key}=${value}\n`;
    let length = Buffer.byteLength(line) + 1;
    while (String(length).length + Buffer.byteLength(line) !== length) length += 1;
    text += `${length}${line}`;
  }
  return Buffer.from(text);
}

/** An uncompressed tar stream; `end: false` leaves out the end-of-archive marker. */
export function rawTar(entries: RawEntry[], { end = true }: { end?: boolean } = {}): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    if (entry.pax) {
      const body = paxBody(entry.pax);
      blocks.push(ustarHeader({ name: 'PaxHeader/entry', type: 'x', mode: 0o644, size: body.length }), ...padded(body));
    }
    if (entry.longName) {
      const body = Buffer.from(`${entry.longName}\0`);
      blocks.push(ustarHeader({ name: '././@LongLink', type: 'L', mode: 0o644, size: body.length }), ...padded(body));
    }
    const type = entry.type ?? '0';
    const body = Buffer.from(entry.body ?? '');
    blocks.push(
      ustarHeader({
        name: entry.name,
        type,
        mode: entry.mode ?? (type === '5' ? 0o755 : 0o644),
        size: body.length,
        linkname: entry.linkname,
      }),
    );
    if (body.length > 0) blocks.push(...padded(body));
  }
  if (end) blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

export const tgz = (entries: RawEntry[], options?: { end?: boolean }) => gzipSync(rawTar(entries, options));
