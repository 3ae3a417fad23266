import { get } from '../api/client';
import type { Item, List, Schedule } from '../api/types';

export const schedulesUrl = (server: string) => `/api/client/servers/${encodeURIComponent(server)}/schedules`;
export const schedulesKey = (server: string) => ['schedules', server] as const;
export const scheduleKey = (server: string, schedule: string | number) => ['schedules', server, String(schedule)] as const;

export const fetchSchedules = (server: string, signal: AbortSignal) =>
  get<List<Item<'server_schedule', Schedule>>>(schedulesUrl(server), signal);
export const fetchSchedule = (server: string, schedule: string, signal: AbortSignal) =>
  get<Item<'server_schedule', Schedule>>(`${schedulesUrl(server)}/${encodeURIComponent(schedule)}`, signal);
