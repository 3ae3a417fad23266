import { randomInt } from 'node:crypto';
import type { AppDeps } from '../../deps.js';
import type { ServerRow, UserRow } from '../../db/schema.js';
import { displayException, forbidden, HttpError, notFound, ValidationError, type FieldFailure } from '../../http/errors.js';
import { can, isPermission, type Access, type Permission } from '../../http/permissions.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import { createUser } from '../users/users.repository.js';
import {
  deleteSubuser,
  findSubuserById,
  findSubuserByUserUuid,
  findSubusersOfServers,
  findUserIdByEmail,
  insertSubuser,
  isSubuserOf,
  isUsernameTaken,
  lockServerForSubusers,
  setSubuserPermissions,
  type SubuserListRow,
} from './subusers.repository.js';
import type { CreateSubuserInput, UpdateSubuserInput } from './subusers.schemas.js';

type Deps = Pick<AppDeps, 'db' | 'clock'>;

/** What the caller is: who, with which rights on the server, acting as whom in the activity log. */
export interface SubuserCaller {
  user: Pick<UserRow, 'id' | 'uuid'>;
  access: Access;
  actor: Actor;
}

export const OWNER_MESSAGE = 'You cannot add the server owner as a subuser for this server.';
export const EXISTS_MESSAGE = 'A user with that email address is already assigned as a subuser for this server.';
export const SELF_MESSAGE = 'Editing your own subuser account is not permitted.';
export const NOT_HELD_MESSAGE = 'Cannot assign permissions to a subuser that your account does not actively possess.';

// The WHATWG (HTML) definition of a valid e-mail address, as user:create accepts it.
const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const RANDOM_CHARACTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export async function listSubusers(deps: Deps, server: ServerRow): Promise<SubuserListRow[]> {
  return findSubusersOfServers(deps.db, [server.id]);
}

/** The subuser `userUuid` names on `server`; 404 when that user is not one. */
export async function findSubuser(deps: Deps, server: ServerRow, userUuid: string): Promise<SubuserListRow> {
  const row = await findSubuserByUserUuid(deps.db, server.id, userUuid);
  if (!row) throw notFound();
  return row;
}

/**
 * The permissions a request asks for, checked: every key known (422 naming the
 * first unknown one), none the caller lacks (403, Pterodactyl's sentence), and
 * `websocket.connect` always added, as Pterodactyl does.
 */
function grantedPermissions(caller: SubuserCaller, requested: readonly string[]): Permission[] {
  if (requested.length === 0) throw ValidationError.of('permissions', 'required', 'The permissions field is required.');
  const failures: FieldFailure[] = [];
  requested.forEach((key, index) => {
    if (!isPermission(key)) {
      failures.push({ field: `permissions.${index}`, rule: 'in', detail: `The selected permissions.${index} is invalid.` });
    }
  });
  if (failures.length > 0) throw new ValidationError(failures);
  const keys = requested as readonly Permission[];
  if (!keys.every((key) => can(caller.access, key))) throw forbidden(NOT_HELD_MESSAGE);
  return [...new Set<Permission>([...keys, 'websocket.connect'])];
}

/**
 * POST /users: makes the account with `email` a subuser of `server`, creating
 * that account (without a password: it cannot sign in until an admin sets one
 * with `user:password`) when no account has that email. The subuser, the new
 * account and the activity entry commit together.
 */
export async function createSubuser(
  deps: Deps,
  server: ServerRow,
  caller: SubuserCaller,
  input: CreateSubuserInput,
): Promise<SubuserListRow> {
  const email = input.email;
  if (!EMAIL.test(email)) throw ValidationError.of('email', 'email', 'The email field must be a valid email address.');
  const permissions = grantedPermissions(caller, input.permissions);
  const now = deps.clock.now();
  const attempt = () =>
    deps.db.transaction().execute(async (trx) => {
      // One creation per server at a time: two requests for one email cannot both pass the checks.
      await lockServerForSubusers(trx, server.id);
      let userId = await findUserIdByEmail(trx, email);
      if (userId === server.owner_id) throw displayException(OWNER_MESSAGE);
      if (userId === caller.user.id) throw displayException(SELF_MESSAGE);
      if (userId !== undefined && (await isSubuserOf(trx, server.id, userId))) throw displayException(EXISTS_MESSAGE);
      if (userId === undefined) {
        const username = await freeUsername(trx, email);
        userId = (await createUser(trx, { username, email, rootAdmin: false, now, passwordHash: null })).id;
      }
      const subuserId = await insertSubuser(trx, { serverId: server.id, userId, permissions, now });
      await recordActivity(trx, {
        serverId: server.id,
        event: 'server:subuser.create',
        actor: caller.actor,
        properties: { email, permissions },
        timestamp: now,
      });
      return subuserId;
    });
  let id: number;
  try {
    id = await attempt();
  } catch (err) {
    // Another server's request made an account for this email (or took the username) meanwhile:
    // once more, which now finds that account. Refusals are final.
    if (err instanceof HttpError) throw err;
    id = await attempt();
  }
  return (await findSubuserById(deps.db, id)) as SubuserListRow;
}

/**
 * Pterodactyl's username for an account a subuser invitation creates: the
 * email's local part without characters other than letters, digits, `_`, `.`
 * and `-`, cut at 64, and 3 random letters or digits (drawn again while taken).
 */
async function freeUsername(db: Deps['db'], email: string): Promise<string> {
  const base = (email.split('@')[0] ?? '').replace(/[^\w.-]+/g, '').slice(0, 64);
  for (;;) {
    const suffix = Array.from({ length: 3 }, () => RANDOM_CHARACTERS[randomInt(RANDOM_CHARACTERS.length)]).join('');
    if (!(await isUsernameTaken(db, base + suffix))) return base + suffix;
  }
}

/** Refuses a caller's action on their own subuser account (Pterodactyl's 403). */
function refuseSelf(caller: SubuserCaller, subuser: SubuserListRow) {
  if (subuser.user_id === caller.user.id) throw forbidden();
}

/**
 * POST /users/{user}: replaces the subuser's permissions. Unchanged
 * permissions write nothing and log nothing (as Pterodactyl); a change is
 * logged with the old and new sets. Live consoles and SFTP sessions lose what
 * was taken at their next access check (at most 30 s).
 */
export async function updateSubuser(
  deps: Deps,
  server: ServerRow,
  caller: SubuserCaller,
  subuser: SubuserListRow,
  input: UpdateSubuserInput,
): Promise<SubuserListRow> {
  refuseSelf(caller, subuser);
  const permissions = grantedPermissions(caller, input.permissions);
  const next = [...permissions].sort();
  const current = (JSON.parse(subuser.permissions) as string[]).sort();
  if (next.join('\n') !== current.join('\n')) {
    await deps.db.transaction().execute(async (trx) => {
      await setSubuserPermissions(trx, subuser.id, permissions);
      await recordActivity(trx, {
        serverId: server.id,
        event: 'server:subuser.update',
        actor: caller.actor,
        properties: { email: subuser.email, old: current, new: next, revoked: true },
        timestamp: deps.clock.now(),
      });
    });
  }
  return (await findSubuserById(deps.db, subuser.id)) as SubuserListRow;
}

/** DELETE /users/{user}: the subuser loses the server; its sockets and SFTP sessions end at their next check. */
export async function removeSubuser(deps: Deps, server: ServerRow, caller: SubuserCaller, subuser: SubuserListRow) {
  refuseSelf(caller, subuser);
  await deps.db.transaction().execute(async (trx) => {
    await deleteSubuser(trx, subuser.id);
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:subuser.delete',
      actor: caller.actor,
      properties: { email: subuser.email, revoked: true },
      timestamp: deps.clock.now(),
    });
  });
}
