import fs from 'node:fs';
import path from 'node:path';
import type { ServerRow } from '../../src/db/schema.js';
import type { Harness } from '../helpers/harness.js';

/** Shared by the file route tests: the volume on disk, the route URLs and the activity entries of a server. */
export function fileTools(h: Harness) {
  const volume = (server: ServerRow) => h.daemon.volumeDir(server.uuid);
  return {
    volume,
    url: (server: ServerRow, rest: string) => `/api/client/servers/${server.uuid_short}/files/${rest}`,
    put(server: ServerRow, files: Record<string, string | Buffer>) {
      for (const [name, content] of Object.entries(files)) {
        const target = path.join(volume(server), name);
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.writeFileSync(target, content);
      }
    },
    read: (server: ServerRow, name: string) => fs.readFileSync(path.join(volume(server), name), 'utf8'),
    exists: (server: ServerRow, name: string) => fs.existsSync(path.join(volume(server), name)),
    /** Every entry under the volume, relative, sorted (links not followed). */
    tree(server: ServerRow): string[] {
      const out: string[] = [];
      const walk = (dir: string, prefix: string) => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
          const rel = prefix + entry.name;
          out.push(entry.isDirectory() ? `${rel}/` : rel);
          if (entry.isDirectory()) walk(path.join(dir, entry.name), `${rel}/`);
        }
      };
      walk(volume(server), '');
      return out.sort();
    },
    async events(server: ServerRow) {
      const rows = await h.db.db
        .selectFrom('activity_logs')
        .selectAll()
        .where('server_id', '=', server.id)
        .orderBy('id')
        .execute();
      return rows.map((r) => ({ event: r.event, properties: JSON.parse(r.properties) as Record<string, unknown> }));
    },
  };
}

/** A multipart/form-data body of file parts, as a browser's FormData sends it. */
export function multipartBody(parts: { field?: string; filename: string; content: string | Buffer }[]) {
  const boundary = `----quetzal${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${part.field ?? 'files'}"; filename="${part.filename}"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      ),
      Buffer.isBuffer(part.content) ? part.content : Buffer.from(part.content),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The path and query of an absolute signed URL, for app.inject. */
export function localPart(url: string): string {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
}
