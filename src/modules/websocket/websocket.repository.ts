import type { Queryable } from '../../db/database.js';
import type { ServerRow, UserRow } from '../../db/schema.js';

/** Placeholders per statement stay well under SQLite's and PostgreSQL's limits. */
const CHUNK = 500;

function chunks<T>(values: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += CHUNK) out.push(values.slice(i, i + CHUNK));
  return out;
}

export type SocketUser = Pick<UserRow, 'id' | 'uuid' | 'root_admin'>;

/**
 * In one statement: the server (by full UUID), the user (by UUID) and that
 * user's subuser permissions on it (JSON as stored; null when not a
 * subuser). Undefined when either is gone.
 */
export async function findSocketAccess(
  db: Queryable,
  serverUuid: string,
  userUuid: string,
): Promise<{ server: ServerRow; user: SocketUser; subuserPermissions: string | null } | undefined> {
  const row = await db
    .selectFrom('servers as s')
    .innerJoin('users as u', (join) => join.on('u.uuid', '=', userUuid))
    .leftJoin('subusers as su', (join) => join.onRef('su.server_id', '=', 's.id').onRef('su.user_id', '=', 'u.id'))
    .selectAll('s')
    .select(['u.id as u_id', 'u.uuid as u_uuid', 'u.root_admin as u_root_admin', 'su.permissions as subuser_permissions'])
    .where('s.uuid', '=', serverUuid)
    .executeTakeFirst();
  if (!row) return undefined;
  const { u_id: id, u_uuid: uuid, u_root_admin: rootAdmin, subuser_permissions: subuserPermissions, ...server } = row;
  return { server, user: { id, uuid, root_admin: rootAdmin }, subuserPermissions };
}

/** The rows of the servers that have sockets (the suspension poll): one statement per 500. */
export async function findServersByUuids(db: Queryable, uuids: readonly string[]): Promise<ServerRow[]> {
  const rows: ServerRow[] = [];
  for (const part of chunks(uuids))
    rows.push(...(await db.selectFrom('servers').selectAll().where('uuid', 'in', part).execute()));
  return rows;
}

export async function findSocketUsers(db: Queryable, ids: readonly number[]): Promise<SocketUser[]> {
  const rows: SocketUser[] = [];
  for (const part of chunks(ids)) {
    rows.push(...(await db.selectFrom('users').select(['id', 'uuid', 'root_admin']).where('id', 'in', part).execute()));
  }
  return rows;
}

/** Subuser rows among these servers and users (permissions as stored). */
export async function findSubuserPermissions(
  db: Queryable,
  serverIds: readonly number[],
  userIds: readonly number[],
): Promise<{ server_id: number; user_id: number; permissions: string }[]> {
  const rows: { server_id: number; user_id: number; permissions: string }[] = [];
  if (userIds.length === 0) return rows;
  for (const servers of chunks(serverIds)) {
    for (const users of chunks(userIds)) {
      rows.push(
        ...(await db
          .selectFrom('subusers')
          .select(['server_id', 'user_id', 'permissions'])
          .where('server_id', 'in', servers)
          .where('user_id', 'in', users)
          .execute()),
      );
    }
  }
  return rows;
}
