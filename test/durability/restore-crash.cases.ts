/**
 * docs/reference/backups-and-restores.md#durability: a restore or a backup cut short by a SIGKILL at any instant. A real
 * `quetzal serve` process is killed at each named point of a restore
 * (QUETZAL_TEST_CRASH_AT, src/crash-point.ts) and once from outside at a
 * random moment; a restarted service must leave the volume exactly the old
 * tree or exactly the restored one, the status null, the event logged, no
 * restore folder behind, and the server usable. Likewise a backup killed
 * mid-write is failed, its partial archive gone.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DialectName } from '../../src/db/database.js';
import { createSandbox, quetzalJson, type CliSandbox } from '../cli/helpers.js';
import {
  api,
  backupTree,
  changedTree,
  deathOf,
  restoreLeftovers,
  serve,
  snapshotTree,
  statusOf,
  waitFor,
  writeTree,
  type TreeSpec,
} from './helpers.js';

interface Setup {
  box: CliSandbox;
  token: string;
  server: string;
  volume: string;
  backup: string;
  /** The volume before each restore; the two trees a restore may leave. */
  before: TreeSpec;
  beforeSnapshot: Record<string, string>;
  restored: Record<string, string>;
}

async function prepare(dialect: DialectName, truncate: boolean, scale = 1): Promise<Setup> {
  const box = await createSandbox(dialect);
  const env = box.env;
  await quetzalJson(['user:create', '--username', 'owner', '--email', 'owner@example.com'], env);
  const { token } = await quetzalJson(['key:create', '--user', 'owner'], env);
  const { uuid: server } = await quetzalJson(
    ['server:create', '--owner', 'owner', '--name', 'crashy', '--backup-limit', '100'],
    env,
  );
  const volume = path.join(box.dataDir, 'volumes', server as string);
  fs.mkdirSync(volume, { recursive: true });
  const backed = backupTree(scale);
  writeTree(volume, backed);
  const backupSnapshot = snapshotTree(volume);
  const { uuid: backup } = await quetzalJson(['backup:create', '--server', server as string, '--name', 'base'], env);
  const before = changedTree(backed);
  writeTree(volume, before);
  const beforeSnapshot = snapshotTree(volume);
  // Truncate: exactly the backup; merge: the backup's files over the volume's, the newer ones kept.
  const restored = truncate ? backupSnapshot : { ...beforeSnapshot, ...backupSnapshot };
  return {
    box,
    token: token as string,
    server: server as string,
    volume,
    backup: backup as string,
    before,
    beforeSnapshot,
    restored,
  };
}

/** The events of the server's restores, oldest first, read from the database. */
async function restoreEvents(setup: Setup): Promise<Array<{ event: string; properties: Record<string, unknown> }>> {
  const db = setup.box.db().db;
  const rows = await db
    .selectFrom('activity_logs')
    .innerJoin('servers', 'servers.id', 'activity_logs.server_id')
    .select(['activity_logs.event', 'activity_logs.properties'])
    .where('servers.uuid', '=', setup.server)
    .where('activity_logs.event', 'like', 'server:backup.restore%')
    .orderBy('activity_logs.id')
    .execute();
  return rows.map((r) => ({ event: r.event, properties: JSON.parse(r.properties) as Record<string, unknown> }));
}

/** Restarts without the crash point and checks everything docs/reference/backups-and-restores.md#durability promises; returns which tree the volume holds. */
async function recoverAndCheck(setup: Setup, label: string, eventsBefore: number): Promise<'old' | 'restored'> {
  const service = await serve(setup.box.env);
  try {
    // Recovery runs before the API listens: the status is already back.
    expect(await statusOf(service, setup.token, setup.server), label).toBeNull();
    const tree = snapshotTree(setup.volume);
    const which = JSON.stringify(tree) === JSON.stringify(setup.restored) ? 'restored' : 'old';
    expect(tree, `${label}: the volume must be exactly one of the two trees`).toEqual(
      which === 'restored' ? setup.restored : setup.beforeSnapshot,
    );
    expect(restoreLeftovers(setup.box.dataDir), label).toEqual([]);
    const events = (await restoreEvents(setup)).slice(eventsBefore);
    expect(
      events.map((e) => e.event),
      label,
    ).toEqual([
      'server:backup.restore',
      which === 'restored' ? 'server:backup.restore-complete' : 'server:backup.restore-failed',
    ]);
    if (which === 'old') expect(events[1]!.properties, label).toMatchObject({ reason: 'interrupted' });

    // Usable again: power is not refused, and a restore runs to its end.
    const power = await api(service, setup.token, 'POST', `/servers/${setup.server}/power`, { signal: 'kill' });
    expect(power.status, label).not.toBe(409);
    const again = await api(service, setup.token, 'POST', `/servers/${setup.server}/backups/${setup.backup}/restore`, {
      truncate: true,
    });
    expect(again.status, label).toBe(204);
    await waitFor('the restore after recovery', async () => (await statusOf(service, setup.token, setup.server)) === null);
    return which;
  } finally {
    await service.stop();
  }
}

/** One round: the volume as before, a restore that dies at `point`, then recovery. */
async function crashRound(setup: Setup, truncate: boolean, point: string, expected: 'old' | 'restored') {
  const label = `${point} truncate=${truncate}`;
  writeTree(setup.volume, setup.before);
  const eventsBefore = (await restoreEvents(setup)).length;
  const service = await serve(setup.box.env, point);
  const died = deathOf(service);
  // The process may die before it answers (restore-accepted): no answer is fine.
  await api(service, setup.token, 'POST', `/servers/${setup.server}/backups/${setup.backup}/restore`, { truncate }).catch(
    () => undefined,
  );
  expect(await died, label).toBe('SIGKILL');
  expect(await recoverAndCheck(setup, label, eventsBefore), label).toBe(expected);
}

/** The variants a database's file runs: both on SQLite alone; split between the two when PostgreSQL is there too. */
export function restoreCrashVariants(dialect: DialectName, withPostgres: boolean): boolean[] {
  if (!withPostgres) return [true, false];
  return dialect === 'sqlite' ? [true] : [false];
}

const POINTS: Array<{ point: string; expected: 'old' | 'restored'; truncate?: boolean }> = [
  { point: 'restore-accepted', expected: 'old' },
  { point: 'restore-staging', expected: 'old' },
  { point: 'restore-staged', expected: 'old' },
  { point: 'restore-moving', expected: 'restored' },
  { point: 'restore-emptied', expected: 'restored', truncate: true },
  { point: 'restore-merge-step:1', expected: 'restored' },
  { point: 'restore-merge-step:3', expected: 'restored', truncate: true },
  { point: 'restore-merge-step:150', expected: 'restored', truncate: false },
  { point: 'restore-moved', expected: 'restored' },
  { point: 'restore-finished', expected: 'restored' },
];

/**
 * The suite for one database; one test file per database, so that two workers
 * share its minutes. `variants`: which restores (with truncate, without) are
 * killed at every point. Each variant's rounds are a minute of real restarts,
 * and what differs between the databases (the restore's row, status and events
 * in one transaction) is the same code in both variants: so with PostgreSQL
 * there, each database takes one variant (restoreCrashVariants) and every
 * (point, variant) pair still runs once, on one database or the other.
 */
export function restoreCrashSuite(dialect: DialectName, variants: readonly boolean[]): void {
  describe.concurrent(`a restore killed at any instant [${dialect}]`, () => {
    for (const truncate of variants) {
      it(`${truncate ? 'with' : 'without'} truncate, at every crash point`, async () => {
        const setup = await prepare(dialect, truncate);
        try {
          for (const { point, expected, truncate: only } of POINTS) {
            if (only !== undefined && only !== truncate) continue;
            await crashRound(setup, truncate, point, expected);
          }
        } finally {
          await setup.box.dispose();
        }
      }, 240_000);
    }
  });

  describe(`killed from outside, and a backup killed mid-write [${dialect}]`, () => {
    let setup: Setup;
    beforeAll(async () => {
      setup = await prepare(dialect, true, 4);
    }, 120_000);
    afterAll(async () => {
      await setup?.box.dispose();
    });

    it('a restore killed by SIGKILL at a random moment leaves the old or the restored tree, with the matching event', async () => {
      // How long a whole restore takes here, so that the random moments cover all of it (and a little after).
      writeTree(setup.volume, setup.before);
      const timing = await serve(setup.box.env);
      const began = performance.now();
      expect(
        (await api(timing, setup.token, 'POST', `/servers/${setup.server}/backups/${setup.backup}/restore`, { truncate: true }))
          .status,
      ).toBe(204);
      await waitFor('the timed restore', async () => (await statusOf(timing, setup.token, setup.server)) === null);
      const restoreMs = performance.now() - began;
      await timing.stop();

      const seen: string[] = [];
      for (let round = 0; round < 4; round += 1) {
        writeTree(setup.volume, setup.before);
        const eventsBefore = (await restoreEvents(setup)).length;
        const service = await serve(setup.box.env);
        const died = deathOf(service);
        const accepted = await api(service, setup.token, 'POST', `/servers/${setup.server}/backups/${setup.backup}/restore`, {
          truncate: true,
        });
        expect(accepted.status).toBe(204);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * restoreMs * 1.2));
        service.child.kill('SIGKILL');
        expect(await died).toBe('SIGKILL');
        seen.push(await recoverAndCheck(setup, `random kill ${round}`, eventsBefore));
      }
      console.log(`random kills (a whole restore takes ${Math.round(restoreMs)} ms) left: ${seen.join(', ')}`);
    }, 120_000);

    it('a backup killed mid-write is failed, its partial archive gone, and it does not count', async () => {
      writeTree(setup.volume, setup.before);
      const service = await serve(setup.box.env, 'backup-writing');
      const died = deathOf(service);
      const started = await api(service, setup.token, 'POST', `/servers/${setup.server}/backups`, { name: 'cut short' });
      expect(started.status).toBe(200);
      const uuid = started.body.attributes.uuid as string;
      expect(await died).toBe('SIGKILL');
      const backups = path.join(setup.box.dataDir, 'backups');
      expect(fs.readdirSync(backups).some((name) => name.includes(uuid) && name.endsWith('.partial'))).toBe(true);

      const again = await serve(setup.box.env);
      try {
        const shown = await api(again, setup.token, 'GET', `/servers/${setup.server}/backups/${uuid}`);
        expect(shown.body.attributes).toMatchObject({ is_successful: false, checksum: null });
        expect(shown.body.attributes.completed_at).not.toBeNull();
        expect(fs.readdirSync(backups).filter((name) => name.includes(uuid))).toEqual([]);
        const list = await api(again, setup.token, 'GET', `/servers/${setup.server}/backups`);
        const counted = (list.body.data as Array<{ attributes: { is_successful: boolean } }>).filter(
          (b) => b.attributes.is_successful,
        );
        expect(list.body.meta.backup_count).toBe(counted.length);
        const events = await setup.box
          .db()
          .db.selectFrom('activity_logs')
          .select(['event', 'properties'])
          .where('event', '=', 'server:backup.fail')
          .execute();
        expect(events.map((e) => JSON.parse(e.properties))).toContainEqual({ name: 'cut short', reason: 'interrupted' });
        const restore = await api(again, setup.token, 'POST', `/servers/${setup.server}/backups/${uuid}/restore`, {});
        expect(restore.status).toBe(409);
        // The server works: a new backup succeeds.
        const fresh = await api(again, setup.token, 'POST', `/servers/${setup.server}/backups`, { name: 'after' });
        expect(fresh.status).toBe(200);
        await waitFor('the new backup', async () => {
          const res = await api(again, setup.token, 'GET', `/servers/${setup.server}/backups/${fresh.body.attributes.uuid}`);
          return res.body.attributes.completed_at !== null;
        });
        const done = await api(again, setup.token, 'GET', `/servers/${setup.server}/backups/${fresh.body.attributes.uuid}`);
        expect(done.body.attributes.is_successful).toBe(true);
      } finally {
        await again.stop();
      }
    }, 120_000);
  });
}
