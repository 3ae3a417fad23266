import type { Actor } from '../actor.js';
import type { AllocationRow, ApiKeyRow, BackupRow, ScheduleRow, ServerRow, TaskRow, UserRow } from '../db/schema.js';
import type { Access, AccessRefusal, ServerAction } from './permissions.js';

/**
 * The caller of an authenticated request: through an API key (`key`) or a
 * signed-in browser's session (`sessionId`, the session row's id), never both.
 */
export interface Authenticated {
  user: UserRow;
  key: ApiKeyRow | null;
  sessionId: string | null;
  actor: Actor;
}

/** A live session named by a cookie: its caller (no key: `actor.apiKeyId` null) and the CSRF token its mutating requests must carry. */
export interface SessionAuthentication {
  auth: Authenticated;
  csrfToken: string;
}

/** Why a bearer token was refused: 401 for an unknown or revoked key, 403 for a caller outside its allowed IPs. */
export type Authentication = { ok: true; auth: Authenticated } | { ok: false; reason: 'unknown-key' | 'ip-not-allowed' };

/** The server a request addresses, the caller's rights on it, and the rows its path names. */
export interface ServerTarget {
  server: ServerRow;
  access: Access;
  schedule?: ScheduleRow;
  task?: TaskRow;
  backup?: BackupRow;
  allocation?: AllocationRow;
}

/** The guard's question answered: the target, or why the caller may not act on it. */
export type TargetDecision = { ok: true; target: ServerTarget } | { ok: false; refusal: AccessRefusal };

/** The ids a client route's path may carry, as the router read them (strings, unchecked). */
export interface PathIds {
  server: string;
  schedule?: string | undefined;
  task?: string | undefined;
  backup?: string | undefined;
  allocation?: string | undefined;
}

/**
 * What the client guard needs from the modules, injected by the app so that
 * the HTTP layer knows nothing of keys, servers or their tables.
 */
export interface ClientResolver {
  /** The key a bearer token names, checked against its secret and allowed IPs; marks it used. */
  authenticate(token: string, ip: string, now: number): Promise<Authentication>;
  /** The live session a session cookie's token names (null when unknown, ended or expired); marks it seen. */
  authenticateSession(token: string, ip: string, now: number): Promise<SessionAuthentication | null>;
  /**
   * The server `user` may see and every row the path names, each belonging to
   * that server (a task to that schedule), weighed by the one access policy
   * for `action`: not-found when any row is missing or foreign (a 404, never a
   * 403), else forbidden (403) or conflict (409), else the target.
   */
  findServerTarget(user: UserRow, ids: PathIds, action: ServerAction): Promise<TargetDecision>;
}
