import { expect, it } from 'vitest';
import type { HTTPMethods } from 'fastify';
import type { ServerRow, ServerStatus } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';

/**
 * The access matrix of docs/reference/api.md#errors, docs/reference/authentication.md and docs/reference/servers.md#status over every server route: who gets a
 * 404, who a 403, and which server statuses make a route a 409.
 */
interface Fixture {
  server: ServerRow;
  schedule: number;
  task: number;
  backup: string;
}

interface RouteCase {
  name: string;
  method: HTTPMethods;
  url: (f: Fixture) => string;
  /** The permission a subuser needs (null: visibility is enough). */
  permission: string | null;
  /** What the body's action needs besides (a task's own action permission, docs/reference/schedules.md#tasks). */
  alsoNeeds?: string[];
  /** A valid body, when the route takes one. */
  body?: object;
  mutates: boolean;
  blockedDuringRestore: boolean;
}

const s = (f: Fixture) => `/api/client/servers/${f.server.uuid_short}`;

const ROUTES: RouteCase[] = [
  { name: 'show server', method: 'GET', url: s, permission: null, mutates: false, blockedDuringRestore: false },
  {
    name: 'resources',
    method: 'GET',
    url: (f) => `${s(f)}/resources`,
    permission: null,
    mutates: false,
    blockedDuringRestore: false,
  },
  {
    name: 'list schedules',
    method: 'GET',
    url: (f) => `${s(f)}/schedules`,
    permission: 'schedule.read',
    mutates: false,
    blockedDuringRestore: false,
  },
  {
    name: 'create schedule',
    method: 'POST',
    url: (f) => `${s(f)}/schedules`,
    permission: 'schedule.create',
    body: { name: 'x' },
    mutates: true,
    blockedDuringRestore: false,
  },
  {
    name: 'show schedule',
    method: 'GET',
    url: (f) => `${s(f)}/schedules/${f.schedule}`,
    permission: 'schedule.read',
    mutates: false,
    blockedDuringRestore: false,
  },
  {
    name: 'update schedule (PUT)',
    method: 'PUT',
    url: (f) => `${s(f)}/schedules/${f.schedule}`,
    permission: 'schedule.update',
    body: {},
    mutates: true,
    blockedDuringRestore: false,
  },
  {
    name: 'update schedule (POST)',
    method: 'POST',
    url: (f) => `${s(f)}/schedules/${f.schedule}`,
    permission: 'schedule.update',
    body: {},
    mutates: true,
    blockedDuringRestore: false,
  },
  {
    name: 'update schedule (PATCH)',
    method: 'PATCH',
    url: (f) => `${s(f)}/schedules/${f.schedule}`,
    permission: 'schedule.update',
    body: {},
    mutates: true,
    blockedDuringRestore: false,
  },
  {
    name: 'execute schedule',
    method: 'POST',
    url: (f) => `${s(f)}/schedules/${f.schedule}/execute`,
    permission: 'schedule.update',
    mutates: true,
    blockedDuringRestore: true,
  },
  {
    name: 'create task',
    method: 'POST',
    url: (f) => `${s(f)}/schedules/${f.schedule}/tasks`,
    permission: 'schedule.update',
    alsoNeeds: ['control.start'],
    body: { action: 'power', payload: 'start', time_offset: 0 },
    mutates: true,
    blockedDuringRestore: false,
  },
  {
    name: 'update task',
    method: 'PUT',
    url: (f) => `${s(f)}/schedules/${f.schedule}/tasks/${f.task}`,
    permission: 'schedule.update',
    alsoNeeds: ['control.console'],
    body: { time_offset: 1 },
    mutates: true,
    blockedDuringRestore: false,
  },
  {
    name: 'activity',
    method: 'GET',
    url: (f) => `${s(f)}/activity`,
    permission: 'activity.read',
    mutates: false,
    blockedDuringRestore: false,
  },
  {
    name: 'list backups',
    method: 'GET',
    url: (f) => `${s(f)}/backups`,
    permission: 'backup.read',
    mutates: false,
    blockedDuringRestore: false,
  },
  {
    name: 'show backup',
    method: 'GET',
    url: (f) => `${s(f)}/backups/${f.backup}`,
    permission: 'backup.read',
    mutates: false,
    blockedDuringRestore: false,
  },
  {
    name: 'create backup',
    method: 'POST',
    url: (f) => `${s(f)}/backups`,
    permission: 'backup.create',
    body: {},
    mutates: true,
    blockedDuringRestore: true,
  },
  {
    name: 'restore backup',
    method: 'POST',
    url: (f) => `${s(f)}/backups/${f.backup}/restore`,
    permission: 'backup.restore',
    body: {},
    mutates: true,
    blockedDuringRestore: true,
  },
  {
    name: 'power',
    method: 'POST',
    url: (f) => `${s(f)}/power`,
    permission: 'control.start',
    body: { signal: 'start' },
    mutates: true,
    blockedDuringRestore: true,
  },
  {
    name: 'command',
    method: 'POST',
    url: (f) => `${s(f)}/command`,
    permission: 'control.console',
    body: { command: 'say hi' },
    mutates: true,
    blockedDuringRestore: true,
  },
];

/** Everything the routes address, created directly so statuses can be set freely. */
async function fixture(h: Harness, status: ServerStatus | null = null): Promise<Fixture & { ownerToken: string }> {
  const { owner, server } = await h.make.ownedServer();
  const now = h.clock.now();
  const schedule = await h.db.db
    .insertInto('schedules')
    .values({
      server_id: server.id,
      name: 'fixture',
      cron_minute: '0',
      cron_hour: '0',
      cron_day_of_month: '*',
      cron_month: '*',
      cron_day_of_week: '*',
      is_active: 1,
      is_processing: 0,
      only_when_online: 0,
      last_run_at: null,
      next_run_at: now + 86_400_000,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const task = await h.db.db
    .insertInto('tasks')
    .values({
      schedule_id: schedule.id,
      sequence_id: 1,
      action: 'command',
      payload: 'say hi',
      time_offset: 0,
      is_queued: 0,
      continue_on_failure: 0,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const backupUuid = crypto.randomUUID();
  await h.db.db
    .insertInto('backups')
    .values({
      uuid: backupUuid,
      server_id: server.id,
      name: 'fixture',
      ignored_files: '[]',
      checksum: null,
      bytes: 0,
      is_successful: 0,
      is_locked: 0,
      created_at: now,
      completed_at: null,
    })
    .execute();
  if (status) await h.make.setStatus(server, status);
  return { ownerToken: owner.token, server: { ...server, status }, schedule: schedule.id, task: task.id, backup: backupUuid };
}

function send(h: Harness, token: string, route: RouteCase, f: Fixture, body = route.body) {
  return h.request(token, { method: route.method, url: route.url(f), ...(body ? { payload: body } : {}) });
}

describeEachDatabase('access matrix', (database) => {
  const h = useHarness(database);

  it('every route is a 404 for a stranger and for ids of another server', async () => {
    const f = await fixture(h);
    const other = await fixture(h);
    const stranger = await h.make.user();
    for (const route of ROUTES) {
      expect((await send(h, stranger.token, route, f)).statusCode, route.name).toBe(404);
      if (route.url(f).includes(`/schedules/${f.schedule}`) || route.url(f).includes(`/backups/${f.backup}`)) {
        // Server A's schedule/task/backup addressed under server B (which the caller owns).
        const crossed = { ...f, server: other.server };
        expect((await send(h, other.ownerToken, route, crossed)).statusCode, `${route.name} crossed`).toBe(404);
      }
    }
  });

  it('a subuser needs the route permission (403 without it, even with an invalid body)', async () => {
    const f = await fixture(h);
    for (const route of ROUTES) {
      const without = await h.make.subuser(f.server, []);
      const res = await send(
        h,
        without.token,
        route,
        f,
        route.body ? { name: ['invalid'], signal: 'nope', action: 7 } : undefined,
      );
      if (route.permission === null) {
        expect(res.statusCode, route.name).not.toBe(403);
        continue;
      }
      expect(res.statusCode, route.name).toBe(403);
      expect(res.json().errors[0].code, route.name).toBe('AccessDeniedHttpException');
      const withIt = await h.make.subuser(f.server, [route.permission, ...(route.alsoNeeds ?? [])]);
      const allowed = await send(h, withIt.token, route, f);
      expect([403, 404], `${route.name}: ${allowed.body}`).not.toContain(allowed.statusCode);
    }
  });

  it('revoking a permission takes effect on the next request', async () => {
    const f = await fixture(h);
    const sub = await h.make.subuser(f.server, ['schedule.read']);
    const url = `${s(f)}/schedules`;
    expect((await h.request(sub.token, { method: 'GET', url })).statusCode).toBe(200);
    await h.db.db.updateTable('subusers').set({ permissions: '[]' }).where('user_id', '=', sub.user.id).execute();
    expect((await h.request(sub.token, { method: 'GET', url })).statusCode).toBe(403);
  });

  it('root admins see every server with every permission', async () => {
    const f = await fixture(h);
    const admin = await h.make.user({ admin: true });
    for (const route of ROUTES.filter((r) => !r.mutates)) {
      const res = await send(h, admin.token, route, f);
      expect([200], `${route.name}: ${res.body}`).toContain(res.statusCode);
    }
  });

  it('a suspended server answers 409 on every route but GET /servers/{server}', async () => {
    const f = await fixture(h, 'suspended');
    for (const route of ROUTES) {
      const res = await send(h, f.ownerToken, route, f);
      if (route.name === 'show server') expect(res.statusCode).toBe(200);
      else {
        expect(res.statusCode, route.name).toBe(409);
        expect(res.json().errors[0].code).toBe('ConflictHttpException');
      }
    }
  });

  it('installing and install_failed servers refuse mutations and serve reads', async () => {
    for (const status of ['installing', 'install_failed'] as const) {
      const f = await fixture(h, status);
      for (const route of ROUTES) {
        const res = await send(h, f.ownerToken, route, f);
        if (route.mutates) expect(res.statusCode, `${status} ${route.name}`).toBe(409);
        else expect(res.statusCode, `${status} ${route.name}`).toBe(200);
      }
    }
  });

  it('while restoring, reads and ordinary edits work; restore, backup, execute, power and command are 409', async () => {
    const f = await fixture(h, 'restoring_backup');
    for (const route of ROUTES) {
      const res = await send(h, f.ownerToken, route, f);
      if (route.blockedDuringRestore) expect(res.statusCode, route.name).toBe(409);
      else expect(res.statusCode, `${route.name}: ${res.body}`).not.toBe(409);
    }
  });
});
