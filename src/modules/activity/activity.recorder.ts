import type { Queryable } from '../../db/database.js';

/** Who made a change: a user (through an API key) or the system (scheduler, daemon). */
export interface Actor {
  readonly userId: number | null;
  readonly apiKeyId: number | null;
  readonly ip: string | null;
}

export const SYSTEM_ACTOR: Actor = Object.freeze({ userId: null, apiKeyId: null, ip: null });

export interface ActivityEntry {
  serverId: number;
  event: string;
  actor: Actor;
  properties?: Record<string, unknown>;
  description?: string | null;
  batch?: string | null;
  timestamp: number;
}

/**
 * Writes one activity entry. Call it with the transaction that makes the change it
 * records, so that the two commit together or not at all (SPEC 2.3).
 */
export async function recordActivity(db: Queryable, entry: ActivityEntry): Promise<void> {
  await db
    .insertInto('activity_logs')
    .values({
      server_id: entry.serverId,
      event: entry.event,
      actor_id: entry.actor.userId,
      api_key_id: entry.actor.apiKeyId,
      ip: entry.actor.ip,
      properties: JSON.stringify(entry.properties ?? {}),
      description: entry.description ?? null,
      batch: entry.batch ?? null,
      timestamp: entry.timestamp,
    })
    .execute();
}
