import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { CreateTaskBody, UpdateTaskBody } from './tasks.schemas.js';
import { createTask, deleteTask, updateTask } from './tasks.service.js';
import { taskItem } from './tasks.transformer.js';

export function registerTaskRoutes(app: FastifyInstance, deps: AppDeps) {
  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/schedules/:schedule/tasks',
    summary: 'Add a task to a schedule',
    permission: 'schedule.update',
    mutates: true,
    body: CreateTaskBody,
    handler: async (request) => taskItem(await createTask(deps, request.target, request.auth.actor, request.body)),
  });

  clientRoute(app, {
    method: ['PUT', 'POST', 'PATCH'],
    url: '/servers/:server/schedules/:schedule/tasks/:task',
    summary: 'Update a task (partial; PUT, POST and PATCH mean the same)',
    permission: 'schedule.update',
    mutates: true,
    body: UpdateTaskBody,
    handler: async (request) =>
      taskItem(await updateTask(deps, request.target, request.target.task, request.auth.actor, request.body)),
  });

  clientRoute(app, {
    method: 'DELETE',
    url: '/servers/:server/schedules/:schedule/tasks/:task',
    summary: 'Delete a task; later tasks move up',
    permission: 'schedule.update',
    mutates: true,
    handler: async (request, reply) => {
      await deleteTask(deps, request.target, request.target.task, request.auth.actor);
      return reply.status(204).send();
    },
  });
}
