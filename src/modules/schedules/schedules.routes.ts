import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { list } from '../../http/envelopes.js';
import { CreateScheduleBody, UpdateScheduleBody } from './schedules.schemas.js';
import {
  createSchedule,
  deleteSchedule,
  listSchedules,
  requestScheduleRun,
  updateSchedule,
  scheduleWithTasks,
} from './schedules.service.js';
import { scheduleItem } from './schedules.transformer.js';

export function registerScheduleRoutes(app: FastifyInstance, deps: AppDeps) {
  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/schedules',
    summary: "List a server's schedules with their tasks",
    permission: 'schedule.read',
    handler: async (request) => list((await listSchedules(deps.db, request.target.server)).map(scheduleItem)),
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/schedules',
    summary: 'Create a schedule',
    permission: 'schedule.create',
    mutates: true,
    body: CreateScheduleBody,
    handler: async (request) => {
      const schedule = await createSchedule(deps, request.target.server, request.auth.actor, request.body);
      return scheduleItem({ schedule, tasks: [] });
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/schedules/:schedule',
    summary: 'Show a schedule with its tasks',
    permission: 'schedule.read',
    handler: async (request) => scheduleItem(await scheduleWithTasks(deps.db, request.target.schedule)),
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
      return scheduleItem(await updateSchedule(deps, server, schedule, request.auth.actor, request.body));
    },
  });

  clientRoute(app, {
    method: 'DELETE',
    url: '/servers/:server/schedules/:schedule',
    summary: 'Delete a schedule and its tasks',
    permission: 'schedule.delete',
    mutates: true,
    handler: async (request, reply) => {
      await deleteSchedule(deps, request.target.server, request.target.schedule, request.auth.actor);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/schedules/:schedule/execute',
    summary: 'Run a schedule now, whether or not it is active (202, empty body)',
    permission: 'schedule.update',
    mutates: true,
    blockedDuringRestore: true,
    handler: async (request, reply) => {
      await requestScheduleRun(deps, request.target.server, request.target.schedule, request.auth.actor);
      // Pterodactyl answers 202 with nothing to read.
      return reply.status(202).send();
    },
  });
}
