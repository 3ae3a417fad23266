/**
 * Every HTTP call of the Schedules pages (docs/reference/schedules.md#schedules and #tasks), each with its
 * TanStack Query hook and the cache it invalidates, in one place: the pages
 * never build a schedules URL themselves. A mutation's error is the API's
 * own `errors[0].detail` (ApiError), shown beside the control that caused it.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { del, get, post, put } from './client';
import { serverUrl } from './servers';
import type { CronFields, Item, List, Schedule, TaskAction } from './types';

/** What the schedule form sends (POST /schedules, PUT /schedules/{id}). */
export interface ScheduleInput extends CronFields {
  name: string;
  is_active: boolean;
  only_when_online: boolean;
}

/** What the task form sends (POST /tasks, PUT /tasks/{id}). */
export interface TaskInput {
  action: TaskAction;
  payload: string;
  time_offset: number;
  continue_on_failure: boolean;
}

type ScheduleItem = Item<'server_schedule', Schedule>;

const schedulesUrl = (server: string, tail = '') => serverUrl(server, `schedules${tail}`);
const scheduleUrl = (server: string, schedule: string, tail = '') =>
  schedulesUrl(server, `/${encodeURIComponent(schedule)}${tail}`);
const taskUrl = (server: string, schedule: string, task: number) => scheduleUrl(server, schedule, `/tasks/${task}`);

/** The list's key is a prefix of each schedule's: invalidating it refreshes both. */
export const schedulesKey = (server: string) => ['schedules', server] as const;
export const scheduleKey = (server: string, schedule: string | number) => ['schedules', server, String(schedule)] as const;

export function useSchedules(server: string) {
  return useQuery({
    queryKey: schedulesKey(server),
    queryFn: ({ signal }) => get<List<ScheduleItem>>(schedulesUrl(server), signal),
  });
}

/** One schedule; asked again every second while it runs, so that "Running" ends by itself. */
export function useSchedule(server: string, schedule: string) {
  return useQuery({
    queryKey: scheduleKey(server, schedule),
    queryFn: ({ signal }) => get<ScheduleItem>(scheduleUrl(server, schedule), signal),
    refetchInterval: (query) => (query.state.data?.attributes.is_processing ? 1_000 : false),
  });
}

/** POST /schedules: resolves to the new schedule (the page opens it). */
export function useCreateSchedule(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (input: ScheduleInput) => (await post<ScheduleItem>(schedulesUrl(server), input)).attributes,
    onSuccess: () => client.invalidateQueries({ queryKey: schedulesKey(server) }),
  });
}

/** PUT /schedules/{id}: the answer is the schedule as saved, so it replaces the cached one at once. */
export function useUpdateSchedule(server: string, schedule: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (input: ScheduleInput) => put<ScheduleItem>(scheduleUrl(server, schedule), input),
    onSuccess: (saved) => {
      client.setQueryData(scheduleKey(server, schedule), saved);
      return client.invalidateQueries({ queryKey: schedulesKey(server) });
    },
  });
}

/** POST /schedules/{id}/execute: 202, the run starts (is_processing turns true). */
export function useRunSchedule(server: string, schedule: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => post(scheduleUrl(server, schedule, '/execute')),
    onSuccess: () => client.invalidateQueries({ queryKey: schedulesKey(server) }),
  });
}

/** DELETE /schedules/{id}: its own entry leaves the cache (not asked again, it would be a 404), the list is stale. */
export function useDeleteSchedule(server: string, schedule: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => del(scheduleUrl(server, schedule)),
    onSuccess: () => {
      client.removeQueries({ queryKey: scheduleKey(server, schedule), exact: true });
      return client.invalidateQueries({ queryKey: schedulesKey(server), exact: true });
    },
  });
}

/** After any change to its tasks: the schedule (its tasks) and the list (their count) are stale. */
function useTaskMutation<Input>(server: string, send: (input: Input) => Promise<unknown>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: send,
    onSuccess: () => client.invalidateQueries({ queryKey: schedulesKey(server) }),
  });
}

export function useCreateTask(server: string, schedule: string) {
  return useTaskMutation(server, (input: TaskInput) => post(scheduleUrl(server, schedule, '/tasks'), input));
}

/** The fields a task's PUT changes: the whole task (edit), or only `sequence_id` (a move; the others shift). */
export type TaskUpdate = { task: number; input: TaskInput } | { task: number; input: { sequence_id: number } };

export function useUpdateTask(server: string, schedule: string) {
  return useTaskMutation(server, ({ task, input }: TaskUpdate) => put(taskUrl(server, schedule, task), input));
}

export function useDeleteTask(server: string, schedule: string) {
  return useTaskMutation(server, (task: number) => del(taskUrl(server, schedule, task)));
}
