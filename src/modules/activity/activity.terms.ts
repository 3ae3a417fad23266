/**
 * The three kinds of term a server's activity vocabulary holds (migration 002).
 * Each entry has exactly one term of each kind: its event name, its IP ('' for
 * none) and its actor (the user id as text, '' for the system).
 */
export const TermKind = { event: 1, ip: 2, actor: 3 } as const;
export type TermKindName = keyof typeof TermKind;

export const SYSTEM_TERM = '';
export const NO_IP_TERM = '';

export function actorTerm(userId: number | null): string {
  return userId === null ? SYSTEM_TERM : String(userId);
}

export function ipTerm(ip: string | null): string {
  return ip ?? NO_IP_TERM;
}

/** The activity_logs columns of one kind: the term id and the place in the term's stream. */
export const STREAM_COLUMNS = {
  event: { term: 'event_term', seq: 'event_seq', index: 'activity_logs_event_stream_index' },
  ip: { term: 'ip_term', seq: 'ip_seq', index: 'activity_logs_ip_stream_index' },
  actor: { term: 'actor_term', seq: 'actor_seq', index: 'activity_logs_actor_stream_index' },
} as const satisfies Record<TermKindName, { term: string; seq: string; index: string }>;
