import type { ActivityLogRow } from '../../db/schema.js';

/**
 * The listing's vocabulary, shared by its layers: the request as validated
 * (activity.schemas.ts), who reads it, and the entries the index engine finds
 * for the transformer.
 */

/** A listing request, already validated (activity.schemas.ts). */
export interface ActivityListQuery {
  page: number;
  perPage: number;
  ascending: boolean;
  /** Substrings, as given (matched case-insensitively, literally). */
  event?: string;
  ip?: string;
  /** A user UUID (lower case) or 'system'. */
  actor?: string;
}

/** Who is reading: the IP rule of docs/reference/activity.md#entries and docs/reference/activity.md#listing depends on it. */
export interface ActivityViewer {
  userId: number;
  /** The server's owner or a root admin: sees every IP. */
  seesAllIps: boolean;
}

/** An entry as the listing reads it: its own columns and its actor's (null for the system). */
export interface ActivityListRow extends Pick<
  ActivityLogRow,
  'id' | 'seq' | 'batch' | 'event' | 'ip' | 'description' | 'actor_id' | 'api_key_id' | 'properties' | 'timestamp'
> {
  actor_uuid: string | null;
  actor_username: string | null;
  actor_email: string | null;
  actor_use_totp: number | null;
  actor_created_at: number | null;
}

/** One page of a listing and the exact number of entries matching. */
export interface ActivityPage {
  rows: ActivityListRow[];
  total: number;
}
