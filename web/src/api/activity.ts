/**
 * A server's activity log (GET /servers/{server}/activity,
 * docs/reference/activity.md#listing): one page of entries for the filters
 * chosen, and the latest entry of an event family (how a restore ended).
 */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { get, query } from './client';
import { serverUrl } from './servers';
import type { ActivityEntry, List } from './types';

export interface ActivityFilters {
  /** A prefix of the event key (`backup` matches `server:backup.*`). */
  event: string;
  ip: string;
  /** A user's uuid, `system`, or empty for anyone. */
  actor: string;
  sort: '-timestamp' | 'timestamp';
}

export type ActivityPage = List<{ attributes: ActivityEntry }>;

export const activityKey = (server: string) => ['activity', server] as const;

function fetchActivity(
  server: string,
  params: { page?: number; perPage: number; sort?: string; event?: string; ip?: string; actor?: string },
  signal?: AbortSignal,
): Promise<ActivityPage> {
  return get<ActivityPage>(
    serverUrl(server, 'activity') +
      query({
        page: params.page,
        per_page: params.perPage,
        sort: params.sort,
        'filter[event]': params.event,
        'filter[ip]': params.ip,
        'filter[actor_id]': params.actor,
      }),
    signal,
  );
}

/** One page of the log; the previous page stays shown while the next loads. */
export function useActivity(server: string, filters: ActivityFilters, page: number, perPage: number) {
  return useQuery({
    queryKey: [...activityKey(server), filters, page],
    queryFn: ({ signal }) =>
      fetchActivity(
        server,
        { page, perPage, sort: filters.sort, event: filters.event.trim(), ip: filters.ip.trim(), actor: filters.actor },
        signal,
      ),
    placeholderData: keepPreviousData,
  });
}

/** The newest entry whose event starts with `eventPrefix`, or null (none, or the user may not read the log). */
export async function latestActivity(server: string, eventPrefix: string, signal?: AbortSignal): Promise<ActivityEntry | null> {
  const page = await fetchActivity(server, { perPage: 1, event: eventPrefix }, signal);
  return page.data[0]?.attributes ?? null;
}
