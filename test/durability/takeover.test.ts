/**
 * docs/reference/backups-and-restores.md#durability: with several instances, a live one takes over a dead one's restore
 * within 60 s. The dead owner is made to look like an instance on another
 * machine (its process cannot be checked, only its lease), stopped mid-merge;
 * a running service must finish it once the lease has run out, by its
 * periodic recovery, without a restart.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_DIALECTS, createSandbox, quetzalJson } from '../cli/helpers.js';
import { plantAbandonedRestore, serve, statusOf, waitFor } from './helpers.js';

describe.concurrent('a live instance takes over a dead instance’s restore and backup', () => {
  for (const dialect of CLI_DIALECTS) {
    it(`once its lease has run out, within 60 s [${dialect}]`, { timeout: 90_000 }, async () => {
      const box = await createSandbox(dialect);
      try {
        await quetzalJson(['user:create', '--username', 'owner', '--email', 'owner@example.com'], box.env);
        const { token } = await quetzalJson(['key:create', '--user', 'owner'], box.env);
        const { uuid: server } = await quetzalJson(['server:create', '--owner', 'owner', '--name', 'orphan'], box.env);
        const volume = path.join(box.dataDir, 'volumes', server as string);
        fs.writeFileSync(path.join(volume, 'a.txt'), 'old a');
        fs.writeFileSync(path.join(volume, 'kept.txt'), 'kept');
        const { uuid: backupUuid } = await quetzalJson(
          ['backup:create', '--server', server as string, '--name', 'base'],
          box.env,
        );

        const service = await serve(box.env);
        try {
          // The other instance accepted a restore, staged it, began the merge (b.txt moved in), and went silent.
          const db = box.db().db;
          const id = randomUUID();
          const folder = path.join(box.dataDir, 'volumes', `.restore-${id}`);
          fs.mkdirSync(path.join(folder, 'staged'), { recursive: true });
          fs.writeFileSync(path.join(folder, 'staged', 'a.txt'), 'restored a');
          fs.writeFileSync(path.join(volume, 'b.txt'), 'restored b');
          fs.writeFileSync(
            path.join(folder, 'journal.json'),
            JSON.stringify({ version: 1, volume: server, truncate: false, phase: 'filling' }),
          );
          const planted = await plantAbandonedRestore(db, {
            id,
            server: server as string,
            backup: backupUuid as string,
            truncate: false,
            owner: 'quetzal|another-machine|0123456789ab|4242|abcd',
            leaseExpiresAt: Date.now() + 2_000,
          });
          const serverRow = { id: planted.serverId };
          // And a backup that instance was writing: failed once its lease runs out, its partial archive removed
          // (planted now, so that one recovery pass finds both).
          const partial = path.join(
            box.dataDir,
            'backups',
            `.${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}.tar.gz.abc.partial`,
          );
          fs.writeFileSync(partial, 'half an archive');
          await db
            .insertInto('backups')
            .values({
              uuid: `${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`,
              server_id: serverRow.id,
              name: 'cut short elsewhere',
              ignored_files: '[]',
              checksum: null,
              bytes: 0,
              is_successful: 0,
              is_locked: 0,
              created_at: Date.now(),
              completed_at: null,
              owner: 'quetzal|another-machine|0123456789ab|4242|abcd',
              lease_expires_at: Date.now() + 1_000,
            })
            .execute();
          const started = Date.now();
          expect(await statusOf(service, token as string, server as string)).toBe('restoring_backup');
          await waitFor(
            'the takeover',
            async () => (await statusOf(service, token as string, server as string)) === null,
            60_000,
          );
          expect(Date.now() - started).toBeLessThan(60_000);
          expect(fs.readFileSync(path.join(volume, 'a.txt'), 'utf8')).toBe('restored a');
          expect(fs.readFileSync(path.join(volume, 'b.txt'), 'utf8')).toBe('restored b');
          expect(fs.readFileSync(path.join(volume, 'kept.txt'), 'utf8')).toBe('kept');
          // Removed just after the outcome is committed.
          await waitFor('the folder to go', async () => !fs.existsSync(folder), 10_000);
          const events = await db.selectFrom('activity_logs').select('event').where('server_id', '=', serverRow.id).execute();
          expect(events.map((e) => e.event)).toContain('server:backup.restore-complete');
          expect(await db.selectFrom('backup_restores').selectAll().execute()).toEqual([]);

          await waitFor(
            'the backup to be failed',
            async () => {
              const row = await db.selectFrom('backups').selectAll().where('name', '=', 'cut short elsewhere').executeTakeFirst();
              return row?.completed_at !== null && !fs.existsSync(partial);
            },
            60_000,
          );
          const failed = await db
            .selectFrom('backups')
            .selectAll()
            .where('name', '=', 'cut short elsewhere')
            .executeTakeFirstOrThrow();
          expect(failed.is_successful).toBe(0);
          const fails = await db
            .selectFrom('activity_logs')
            .select('properties')
            .where('event', '=', 'server:backup.fail')
            .execute();
          expect(fails.map((e) => JSON.parse(e.properties))).toContainEqual({
            name: 'cut short elsewhere',
            reason: 'interrupted',
          });
        } finally {
          await service.stop();
        }
      } finally {
        await box.dispose();
      }
    });
  }
});
