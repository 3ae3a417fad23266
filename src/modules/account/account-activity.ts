import type { Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';
import type { Actor } from '../../actor.js';
import { badRequest } from '../../http/errors.js';
import { paginatedList } from '../../http/envelopes.js';
import { parseActivityQuery } from '../activity/activity.schemas.js';
import { activityItem } from '../activity/activity.transformer.js';
import { findUserActivityPage, insertUserActivity } from './account-activity.repository.js';

/**
 * An account's own events (docs/reference/accounts.md), apart from the servers' activity log,
 * under Pterodactyl's names: `auth:success`, `auth:fail`, `auth:checkpoint`,
 * `auth:token`, `auth:recovery-token`, `auth:sftp.fail` (a wrong SFTP
 * password, `method`), `user:api-key.create|delete`,
 * `user:account.password-changed`, `user:account.email-changed`,
 * `user:two-factor.create|delete`, `user:ssh-key.create|delete`. Callers
 * record inside the transaction of the change they describe.
 */
export type AccountEvent =
  | 'auth:success'
  | 'auth:fail'
  | 'auth:checkpoint'
  | 'auth:token'
  | 'auth:recovery-token'
  | 'auth:sftp.fail'
  | 'user:api-key.create'
  | 'user:api-key.delete'
  | 'user:account.password-changed'
  | 'user:account.email-changed'
  | 'user:two-factor.create'
  | 'user:two-factor.delete'
  | 'user:ssh-key.create'
  | 'user:ssh-key.delete';

/** The properties each event is written with, as Pterodactyl's activity translations use them; any other is additional metadata. */
const LISTED_PROPERTIES: Partial<Record<string, readonly string[]>> = {
  'user:account.email-changed': ['old', 'new'],
  'auth:sftp.fail': ['method'],
  'user:api-key.create': ['identifier'],
  'user:api-key.delete': ['identifier'],
  'user:ssh-key.create': ['fingerprint'],
  'user:ssh-key.delete': ['fingerprint'],
};

function hasAdditionalMetadata(event: string, properties: Record<string, unknown>): boolean {
  const listed = LISTED_PROPERTIES[event] ?? [];
  return Object.keys(properties).some((key) => !listed.includes(key));
}

export function recordAccountEvent(
  db: Queryable,
  entry: {
    userId: number;
    event: AccountEvent;
    ip: string | null;
    apiKeyId?: number | null;
    properties?: Record<string, unknown>;
    now: number;
  },
): Promise<void> {
  return insertUserActivity(db, {
    userId: entry.userId,
    event: entry.event,
    ip: entry.ip,
    apiKeyId: entry.apiKeyId ?? null,
    properties: entry.properties ?? {},
    timestamp: entry.now,
  });
}

/** The same, for a change made by a request's caller (their IP and key). */
export function recordActorEvent(
  db: Queryable,
  actor: Actor,
  userId: number,
  event: AccountEvent,
  now: number,
  properties: Record<string, unknown> = {},
): Promise<void> {
  return recordAccountEvent(db, { userId, event, ip: actor.ip, apiKeyId: actor.apiKeyId, properties, now });
}

/**
 * `GET /account/activity` (Pterodactyl's account ActivityLogController): the
 * caller's events in the `activity_log` shape, paginated (25, at most 100),
 * newest first unless `sort=timestamp`, `filter[event]` a substring. The
 * caller is every entry's actor and sees every IP.
 */
export async function listAccountActivity(
  db: Queryable,
  user: UserRow,
  rawQuery: Readonly<Record<string, unknown>> | undefined,
  request: { url: string; baseUrl: string },
) {
  const filter = rawQuery?.filter;
  if (filter !== null && typeof filter === 'object' && !Array.isArray(filter)) {
    const unknown = Object.keys(filter).filter((key) => key !== 'event');
    if (unknown.length > 0) {
      throw badRequest(
        `Requested filter(s) \`${unknown.join(', ')}\` are not allowed. Allowed filter(s) are \`event\`.`,
        'InvalidFilterQuery',
      );
    }
  }
  const query = parseActivityQuery(rawQuery);
  const page = await findUserActivityPage(db, user.id, query);
  const viewer = { userId: user.id, seesAllIps: true };
  const data = page.rows.map((row) => {
    const entry = activityItem(
      {
        id: row.id,
        seq: row.id,
        batch: null,
        event: row.event,
        ip: row.ip,
        description: null,
        actor_id: user.id,
        api_key_id: row.api_key_id,
        properties: row.properties,
        timestamp: row.timestamp,
        actor_uuid: user.uuid,
        actor_username: user.username,
        actor_email: user.email,
        actor_use_totp: user.use_totp,
        actor_created_at: user.created_at,
      },
      viewer,
    );
    entry.attributes.has_additional_metadata = hasAdditionalMetadata(row.event, entry.attributes.properties);
    return entry;
  });
  return paginatedList(data, { total: page.total, page: query.page, perPage: query.perPage }, request);
}
