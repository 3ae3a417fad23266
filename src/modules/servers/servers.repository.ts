import { sql, type ExpressionBuilder, type SqlBool } from 'kysely';
import { precompiled, type Queryable } from '../../db/database.js';
import type { Tables, NewServer, ServerRow, ServerStatus, UserRow } from '../../db/schema.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SHORT = /^[0-9a-f]{8}$/i;

/** A server by full UUID or 8-character short identifier (docs/reference/api.md#wire-conventions); undefined for anything else. */
export async function findServerByReference(db: Queryable, reference: string): Promise<ServerRow | undefined> {
  if (UUID.test(reference)) {
    return db.selectFrom('servers').selectAll().where('uuid', '=', reference.toLowerCase()).executeTakeFirst();
  }
  if (SHORT.test(reference)) {
    return db.selectFrom('servers').selectAll().where('uuid_short', '=', reference.toLowerCase()).executeTakeFirst();
  }
  return undefined;
}

type ServerWithSubuserRow = ServerRow & { subuser_permissions: string | null };
const SERVER_FOR_USER_COLUMNS = sql`s.id, s.uuid, s.uuid_short, s.name, s.owner_id, s.status, s.backup_limit, s.startup,
  s.stop_command, s.node, s.created_at, s.updated_at, s.memory_mib, s.cpu_percent, s.disk_mib, s.pids, s.uid_slot, s.inodes,
  s.allocation_id, s.allocation_limit, s.database_limit, s.egg_id, s.image, s.description,
  su.permissions as subuser_permissions`;
const serverForUserByUuid = precompiled<ServerWithSubuserRow>(
  (userId, uuid) => sql`select ${SERVER_FOR_USER_COLUMNS} from servers s
    left join subusers su on su.server_id = s.id and su.user_id = ${userId} where s.uuid = ${uuid}`,
  2,
);
const serverForUserByShort = precompiled<ServerWithSubuserRow>(
  (userId, short) => sql`select ${SERVER_FOR_USER_COLUMNS} from servers s
    left join subusers su on su.server_id = s.id and su.user_id = ${userId} where s.uuid_short = ${short}`,
  2,
);

/**
 * A server by reference (as findServerByReference) and, in the same statement,
 * `userId`'s subuser permissions on it, as stored (JSON; null when not a subuser).
 */
export async function findServerForUser(
  db: Queryable,
  reference: string,
  userId: number,
): Promise<{ server: ServerRow; subuserPermissions: string | null } | undefined> {
  const query = UUID.test(reference) ? serverForUserByUuid : SHORT.test(reference) ? serverForUserByShort : undefined;
  if (!query) return undefined;
  const row = (await query(db, [userId, reference.toLowerCase()])).rows[0];
  if (!row) return undefined;
  const { subuser_permissions: permissions, ...server } = row;
  return { server, subuserPermissions: permissions };
}

/**
 * Which servers GET /api/client lists (docs/reference/accounts.md, Pterodactyl's ClientController):
 * `scope` says whose, `filters` narrow them (all must match), `sort` orders them.
 */
export interface ServerListCriteria {
  /**
   * `accessible`: owned or shared as a subuser (root admins too); `owned`;
   * `others`: every server but the accessible ones; `all`; `none`.
   */
  scope: 'accessible' | 'owned' | 'others' | 'all' | 'none';
  /** Each filter's values are alternatives (Pterodactyl's comma-separated filter values). */
  filters: { uuid?: string[]; name?: string[]; externalId?: string[]; any?: string[] };
  sort: { column: 'id' | 'uuid' | 'name' | 'description'; descending: boolean };
}

const IPV4_SEARCH = /^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?::\d{1,5})?$/;

/** A LIKE pattern's literal part: `%`, `_` and the escape character itself escaped with `\\`. */
function likeLiteral(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function containsIgnoringCase(column: 'servers.uuid' | 'servers.name', value: string) {
  return sql<SqlBool>`lower(${sql.ref(column)}) like ${`%${likeLiteral(value.toLowerCase())}%`} escape '\\'`;
}

/**
 * Pterodactyl's MultiFieldServerFilter (`filter[*]`): an IPv4 address (with an
 * optional `:port` prefix) or `:port` matches the server's allocations; anything
 * else matches the UUID (whole or its start), the short identifier or a part
 * of the name. External ids do not exist in Quetzal.
 */
function anyFieldMatches(value: string) {
  if (IPV4_SEARCH.test(value) || /^:\d{1,5}$/.test(value)) {
    const [ip = '', port] = value.split(':');
    const portLike = port === undefined ? sql`true` : sql`cast(a.port as text) like ${`${port}%`}`;
    const ipMatch = value.startsWith(':') ? sql`true` : sql`a.ip = ${ip}`;
    return sql<SqlBool>`exists (select 1 from allocations a where a.server_id = servers.id and ${ipMatch} and ${portLike})`;
  }
  return sql<SqlBool>`(servers.uuid = ${value.toLowerCase()} or servers.uuid like ${`${likeLiteral(value.toLowerCase())}%`} escape '\\'
    or servers.uuid_short = ${value.toLowerCase()} or lower(servers.name) like ${`%${likeLiteral(value.toLowerCase())}%`} escape '\\')`;
}

/** Servers a user can see, as `criteria` narrows them. */
function visibleServersQuery(db: Queryable, user: UserRow, criteria: ServerListCriteria) {
  let query = db.selectFrom('servers');
  const accessible = (eb: ExpressionBuilder<Tables, 'servers'>) =>
    eb.or([
      eb('servers.owner_id', '=', user.id),
      eb('servers.id', 'in', eb.selectFrom('subusers').select('subusers.server_id').where('subusers.user_id', '=', user.id)),
    ]);
  switch (criteria.scope) {
    case 'accessible':
      query = query.where(accessible);
      break;
    case 'owned':
      query = query.where('servers.owner_id', '=', user.id);
      break;
    case 'others':
      query = query.where((eb) => eb.not(accessible(eb)));
      break;
    case 'none':
      query = query.where(sql<SqlBool>`1 = 2`);
      break;
    case 'all':
      break;
  }
  const { uuid, name, externalId, any } = criteria.filters;
  if (uuid) query = query.where((eb) => eb.or(uuid.map((v) => containsIgnoringCase('servers.uuid', v))));
  if (name) query = query.where((eb) => eb.or(name.map((v) => containsIgnoringCase('servers.name', v))));
  // Quetzal's servers have no external id: the filter matches none.
  if (externalId) query = query.where(sql<SqlBool>`1 = 2`);
  if (any) query = query.where((eb) => eb.or(any.map((v) => anyFieldMatches(v))));
  return query;
}

export async function countVisibleServers(db: Queryable, user: UserRow, criteria: ServerListCriteria): Promise<number> {
  const { total } = await visibleServersQuery(db, user, criteria)
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .executeTakeFirstOrThrow();
  return Number(total);
}

/** One page of the servers a user can see, in the criteria's order (then by id). */
export async function findVisibleServersPage(
  db: Queryable,
  user: UserRow,
  criteria: ServerListCriteria,
  limit: number,
  offset: number,
): Promise<ServerRow[]> {
  const direction = criteria.sort.descending ? 'desc' : 'asc';
  let query = visibleServersQuery(db, user, criteria).selectAll('servers');
  if (criteria.sort.column !== 'id') query = query.orderBy(`servers.${criteria.sort.column}`, direction);
  return query
    .orderBy('servers.id', criteria.sort.column === 'id' ? direction : 'asc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export async function isShortIdentifierTaken(db: Queryable, uuidShort: string): Promise<boolean> {
  const row = await db.selectFrom('servers').select('id').where('uuid_short', '=', uuidShort).executeTakeFirst();
  return row !== undefined;
}

/**
 * Inserts the server with the lowest uid slot no server holds (docs/reference/containment.md: a uid
 * of its own), chosen in the same statement. Two instances inserting at the
 * same moment can choose the same slot: the unique index refuses the second
 * (an error, never a shared uid).
 */
export async function insertServer(db: Queryable, values: Omit<NewServer, 'uid_slot'>): Promise<ServerRow> {
  return db
    .insertInto('servers')
    .values({ ...values, uid_slot: lowestFreeUidSlot() })
    .returningAll()
    .executeTakeFirstOrThrow();
}

function lowestFreeUidSlot() {
  return sql<number>`(case when not exists (select 1 from servers where uid_slot = 0) then 0 else (
    select min(s.uid_slot) + 1 from servers s
    where s.uid_slot is not null and not exists (select 1 from servers t where t.uid_slot = s.uid_slot + 1)
  ) end)`;
}

/** Throws unless the database answers a trivial query (GET /health). */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.selectFrom('servers').select('id').limit(1).execute();
}

/**
 * Sets the status an operator chose, unless a restore holds the server (it sets
 * and clears `restoring_backup` itself). One statement, so a restore that
 * starts meanwhile is never overwritten. False when the server is restoring.
 */
export async function setServerStatusUnlessRestoring(db: Queryable, serverId: number, status: ServerStatus | null, now: number) {
  const result = await db
    .updateTable('servers')
    .set({ status, updated_at: now })
    .where('id', '=', serverId)
    .where((eb) => eb.or([eb('status', 'is', null), eb('status', '!=', 'restoring_backup')]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A server's status as it is now; undefined when the server is gone. */
export async function findServerById(db: Queryable, serverId: number): Promise<ServerRow | undefined> {
  return db.selectFrom('servers').selectAll().where('id', '=', serverId).executeTakeFirst();
}

export async function findServerStatus(db: Queryable, serverId: number): Promise<{ status: ServerStatus | null } | undefined> {
  return db.selectFrom('servers').select('status').where('id', '=', serverId).executeTakeFirst();
}
