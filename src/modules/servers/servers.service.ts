import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../db/database.js';
import type { ServerRow, ServerStatus } from '../../db/schema.js';
import type { Daemon } from '../../daemon/daemon.js';

export interface NewServerInput {
  ownerId: number;
  name: string;
  startup?: string | null;
  stopCommand?: string | null;
  backupLimit?: number;
  now: number;
}

/** Creates a server with a fresh UUID whose first 8 characters (the short identifier) are unique too. */
export async function createServer(db: Queryable, daemon: Daemon, input: NewServerInput): Promise<ServerRow> {
  let uuid = randomUUID();
  while (await db.selectFrom('servers').select('id').where('uuid_short', '=', uuid.slice(0, 8)).executeTakeFirst()) {
    uuid = randomUUID();
  }
  const row = await db
    .insertInto('servers')
    .values({
      uuid,
      uuid_short: uuid.slice(0, 8),
      name: input.name.trim(),
      owner_id: input.ownerId,
      status: null,
      backup_limit: input.backupLimit ?? 10,
      startup: input.startup ?? null,
      stop_command: input.stopCommand ?? null,
      node: 'local',
      created_at: input.now,
      updated_at: input.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await daemon.prepareVolume({ uuid: row.uuid, startup: row.startup, stopCommand: row.stop_command });
  return row;
}

export function daemonServer(server: ServerRow) {
  return { uuid: server.uuid, startup: server.startup, stopCommand: server.stop_command };
}

export const SERVER_STATUSES: readonly (ServerStatus | null)[] = [null, 'installing', 'install_failed', 'suspended', 'restoring_backup'];
