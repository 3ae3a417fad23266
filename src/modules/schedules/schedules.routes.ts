import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { list } from '../../http/envelopes.js';
import { CreateScheduleBody, UpdateScheduleBody, type CreateScheduleInput, type UpdateScheduleInput } from './schedules.schemas.js';
import { createSchedule, deleteSchedule, updateSchedule } from './schedules.service.js';
import { findSchedulesOfServer, findTasksBySchedule } from './schedules.repository.js';
import { scheduleItem } from './schedules.transformer.js';
import type { ScheduleRow } from '../../db/schema.js';

export function registerScheduleRoutes(app: FastifyInstance, deps: AppDeps) {
  const withTasks = async (schedule: ScheduleRow) => {
    const tasks = await findTasksBySchedule(deps.db, [schedule.id]);
    return scheduleItem(schedule, tasks.get(schedule.id) ?? []);
  };

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/schedules',
    summary: "List a server's schedules with their tasks",
    permission: 'schedule.read',
    handler: async (request) => {
      const schedules = await findSchedulesOfServer(deps.db, request.target.server.id);
      const tasks = await findTasksBySchedule(deps.db, schedules.map((s) => s.id));
      return list(schedules.map((s) => scheduleItem(s, tasks.get(s.id) ?? [])));
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/schedules',
    summary: 'Create a schedule',
    permission: 'schedule.create',
    mutates: true,
    body: CreateScheduleBody,
    handler: async (request) => {
      const schedule = await createSchedule(deps, request.target.server, request.auth.actor, request.body as CreateScheduleInput);
      return scheduleItem(schedule, []);
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/schedules/:schedule',
    summary: 'Show a schedule with its tasks',
    permission: 'schedule.read',
    handler: async (request) => withTasks(request.target.schedule!),
  });

  clientRoute(app, {
    method: ['PUT', 'POST', 'PATCH'],
    url: '/servers/:server/schedules/:schedule',
    summary: 'Update a schedule (partial; PUT, POST and PATCH mean the same)',
    permission: 'schedule.update',
    mutates: true,
    body: UpdateScheduleBody,
    handler: async (request) => {
      const { server, schedule } = request.target;
      const updated = await updateSchedule(deps, server, schedule!, request.auth.actor, request.body as UpdateScheduleInput);
      return withTasks(updated);
    },
  });

  clientRoute(app, {
    method: 'DELETE',
    url: '/servers/:server/schedules/:schedule',
    summary: 'Delete a schedule and its tasks',
    permission: 'schedule.delete',
    mutates: true,
    handler: async (request, reply) => {
      await deleteSchedule(deps, request.target.server, request.target.schedule!, request.auth.actor);
      return reply.status(204).send();
    },
  });
}
