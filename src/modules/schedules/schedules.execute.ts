import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import type { ScheduleRow, ServerRow } from '../../db/schema.js';
import { conflict, displayException } from '../../http/errors.js';
import { clientRoute } from '../../http/routes.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import { notifySchedulesChanged } from '../../timing/wakeup.js';

type Deps = Pick<AppDeps, 'db' | 'dialect' | 'clock'> & { onSchedulesChanged?: (() => void) | undefined };

const NO_TASKS = 'Cannot process schedule for task execution: no tasks are registered.';
const BUSY = 'This schedule is already running or waiting to run.';
const SERVER_NOT_READY = 'This server is not in a state that allows its schedules to run.';

/**
 * POST .../schedules/{schedule}/execute (SPEC 7): asks for a run now, whatever
 * is_active says. The request is a row change, not a call into this process's
 * scheduler, so that it works with SCHEDULER=off: whichever instance runs the
 * scheduler picks it up (woken at once here, by NOTIFY elsewhere on PostgreSQL,
 * by its poll on SQLite) and logs `server:schedule.run` like any run.
 *
 * One conditional UPDATE decides: the schedule must be idle, not already
 * requested, have tasks, and its server must be ready. Of two concurrent
 * requests exactly one is accepted. `server:schedule.execute` is written in the
 * same transaction.
 */
export async function requestScheduleRun(deps: Deps, server: ServerRow, schedule: ScheduleRow, actor: Actor): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('schedules')
      .set({ run_requested_at: now })
      .where('id', '=', schedule.id)
      .where('is_processing', '=', 0)
      .where('run_requested_at', 'is', null)
      .where((eb) => eb.exists(eb.selectFrom('tasks').select('tasks.id').whereRef('tasks.schedule_id', '=', 'schedules.id')))
      .where((eb) =>
        eb.exists(
          eb.selectFrom('servers').select('servers.id').whereRef('servers.id', '=', 'schedules.server_id').where('servers.status', 'is', null),
        ),
      )
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) {
      // Refused: say why, in SPEC 7's terms.
      const task = await trx.selectFrom('tasks').select('id').where('schedule_id', '=', schedule.id).limit(1).executeTakeFirst();
      if (!task) throw displayException(NO_TASKS);
      const current = await trx.selectFrom('servers').select('status').where('id', '=', server.id).executeTakeFirst();
      throw conflict(current?.status === null ? BUSY : SERVER_NOT_READY);
    }
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:schedule.execute',
      actor,
      properties: { name: schedule.name },
      timestamp: now,
    });
    // Delivered at commit, to schedulers in other processes.
    await notifySchedulesChanged(trx, deps.dialect);
  });
  deps.onSchedulesChanged?.();
}

export function registerScheduleExecuteRoute(app: FastifyInstance, deps: Deps) {
  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/schedules/:schedule/execute',
    summary: 'Run a schedule now, whether or not it is active (202, empty body)',
    permission: 'schedule.update',
    mutates: true,
    blockedDuringRestore: true,
    handler: async (request, reply) => {
      await requestScheduleRun(deps, request.target.server, request.target.schedule!, request.auth.actor);
      // Pterodactyl answers 202 with nothing to read.
      return reply.status(202).send();
    },
  });
}
