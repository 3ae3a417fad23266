import { sql, type SqlBool } from 'kysely';
import type { Queryable } from '../../db/database.js';

export interface UserActivityInsert {
  userId: number;
  event: string;
  ip: string | null;
  apiKeyId: number | null;
  properties: Record<string, unknown>;
  timestamp: number;
}

export async function insertUserActivity(db: Queryable, entry: UserActivityInsert): Promise<void> {
  await db
    .insertInto('user_activity')
    .values({
      user_id: entry.userId,
      event: entry.event,
      ip: entry.ip,
      api_key_id: entry.apiKeyId,
      properties: JSON.stringify(entry.properties),
      timestamp: entry.timestamp,
    })
    .execute();
}

export interface UserActivityRow {
  id: number;
  event: string;
  ip: string | null;
  api_key_id: number | null;
  properties: string;
  timestamp: number;
}

/** A LIKE pattern's literal part: `%`, `_` and the escape character itself escaped with `\\`. */
const likeLiteral = (value: string) => value.replace(/[\\%_]/g, (c) => `\\${c}`);

/** One page of a user's own events, newest first unless `ascending` (ties by insertion order), and how many match. */
export async function findUserActivityPage(
  db: Queryable,
  userId: number,
  query: { page: number; perPage: number; ascending: boolean; event?: string },
): Promise<{ rows: UserActivityRow[]; total: number }> {
  let base = db.selectFrom('user_activity').where('user_id', '=', userId);
  if (query.event !== undefined) {
    const pattern = `%${likeLiteral(query.event.toLowerCase())}%`;
    base = base.where(sql<SqlBool>`lower(event) like ${pattern} escape '\\'`);
  }
  const counted = await base.select((eb) => eb.fn.countAll<number | string>().as('total')).executeTakeFirst();
  const direction = query.ascending ? 'asc' : 'desc';
  const rows = await base
    .select(['id', 'event', 'ip', 'api_key_id', 'properties', 'timestamp'])
    .orderBy('timestamp', direction)
    .orderBy('id', direction)
    .limit(query.perPage)
    .offset((query.page - 1) * query.perPage)
    .execute();
  return {
    rows: rows.map((r) => ({ ...r, id: Number(r.id), timestamp: Number(r.timestamp) })),
    total: Number(counted?.total ?? 0),
  };
}
