import type { Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';
import type { PathIds, ServerTarget } from '../../http/client-resolver.js';
import type { Access } from '../../http/permissions.js';
import { findAllocationOfServer } from '../allocations/allocations.repository.js';
import { findBackupOfServer } from '../backups/backups.repository.js';
import { findScheduleOfServer } from '../schedules/schedules.repository.js';
import { findTaskOfSchedule } from '../tasks/tasks.repository.js';
import { findServerForUser } from './servers.repository.js';

const INTEGER_ID = /^[1-9][0-9]{0,9}$/;
/** The largest id an `integer` (PostgreSQL `serial`) column holds: larger ones would be an SQL error, not a miss. */
const MAX_INTEGER_ID = 2_147_483_647;
const BACKUP_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path's integer id (schedules, tasks, allocations); NaN for anything that cannot be one, which no row has. */
function integerId(raw: string): number {
  const id = INTEGER_ID.test(raw) ? Number(raw) : NaN;
  return id <= MAX_INTEGER_ID ? id : NaN;
}

/**
 * What a client route addresses (the guard's ClientResolver): the server, if
 * `user` may see it (root admin, owner or subuser), the caller's rights on it,
 * and every row the path names, each belonging to that server. Null when any
 * is missing or foreign: a 404, never a 403.
 */
export async function findServerTarget(db: Queryable, user: UserRow, ids: PathIds): Promise<ServerTarget | null> {
  // The server and the caller's subuser permissions on it in one statement.
  const found = await findServerForUser(db, ids.server, user.id);
  if (!found) return null;
  const { server } = found;
  let access: Access;
  if (user.root_admin === 1 || server.owner_id === user.id) {
    access = { isOwnerOrAdmin: true, permissions: new Set() };
  } else {
    if (found.subuserPermissions === null) return null;
    access = { isOwnerOrAdmin: false, permissions: new Set(JSON.parse(found.subuserPermissions) as string[]) };
  }
  const target: ServerTarget = { server, access };

  if (ids.schedule !== undefined) {
    const id = integerId(ids.schedule);
    target.schedule = Number.isNaN(id) ? undefined : await findScheduleOfServer(db, id, server.id);
    if (!target.schedule) return null;
  }
  if (ids.task !== undefined) {
    const id = integerId(ids.task);
    target.task = Number.isNaN(id) || !target.schedule ? undefined : await findTaskOfSchedule(db, id, target.schedule.id);
    if (!target.task) return null;
  }
  if (ids.backup !== undefined) {
    target.backup = BACKUP_UUID.test(ids.backup) ? await findBackupOfServer(db, ids.backup.toLowerCase(), server.id) : undefined;
    if (!target.backup) return null;
  }
  if (ids.allocation !== undefined) {
    const id = integerId(ids.allocation);
    target.allocation = Number.isNaN(id) ? undefined : await findAllocationOfServer(db, id, server.id);
    if (!target.allocation) return null;
  }
  return target;
}
