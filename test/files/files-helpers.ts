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
