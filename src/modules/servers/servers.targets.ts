import type { Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';
import type { PathIds, ServerTarget, TargetDecision } from '../../http/client-resolver.js';
import type { ServerAction } from '../../http/permissions.js';
import { findAllocationOfServer } from '../allocations/allocations.repository.js';
import { findBackupOfServer } from '../backups/backups.repository.js';
import { findScheduleOfServer } from '../schedules/schedules.repository.js';
import { findTaskOfSchedule } from '../tasks/tasks.repository.js';
import { findServerAccess, refusalOf } from './access-policy.js';

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
 * The guard's question (ClientResolver.findServerTarget): every row the path
 * names must be visible (404 otherwise, before any 403), then the one access
 * policy weighs the action.
 */
export async function decideServerTarget(
  db: Queryable,
  user: UserRow,
  ids: PathIds,
  action: ServerAction,
): Promise<TargetDecision> {
  const target = await findServerTarget(db, user, ids);
  if (!target) return { ok: false, refusal: { kind: 'not-found' } };
  const refusal = refusalOf(target.access, target.server, action);
  return refusal ? { ok: false, refusal } : { ok: true, target };
}

/**
 * What a client route addresses: the server, if
 * `user` may see it (root admin, owner or subuser), the caller's rights on it,
 * and every row the path names, each belonging to that server. Null when any
 * is missing or foreign: a 404, never a 403.
 */
export async function findServerTarget(db: Queryable, user: UserRow, ids: PathIds): Promise<ServerTarget | null> {
  // The server and the caller's subuser permissions on it in one statement.
  const found = await findServerAccess(db, user, ids.server);
  if (!found) return null;
  const { server } = found;
  const target: ServerTarget = { server, access: found.access };

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
