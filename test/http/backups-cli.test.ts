import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect, it, vi } from 'vitest';
import { CliError, type CliContext } from '../../src/cli/command.js';
import { command as backupCreate } from '../../src/cli/commands/backup-create.js';
import { command as backupImport } from '../../src/cli/commands/backup-import.js';
import type { ServerRow } from '../../src/db/schema.js';
import { insertBackup } from '../../src/modules/backups/backups.repository.js';
import { startBackup } from '../../src/modules/backups/backups.service.js';
import { SYSTEM_ACTOR } from '../../src/modules/activity/activity.recorder.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { scratchDir } from '../helpers/scratch.js';

/** The admin commands backup:create and backup:import (docs/reference/configuration.md), and scheduled-backup rotation. */
describeEachDatabase('backup admin commands', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });

  async function events(server: ServerRow) {
    const rows = await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', server.id).orderBy('id').execute();
    return rows.map((r) => ({
      event: r.event,
      actor_id: r.actor_id,
      properties: JSON.parse(r.properties) as Record<string, unknown>,
    }));
  }
  const rows = (server: ServerRow) =>
    h.db.db.selectFrom('backups').selectAll().where('server_id', '=', server.id).orderBy('id').execute();

  function tempFile(bytes: Buffer): string {
    const file = path.join(scratchDir('quetzal-cli-'), 'world.tar.gz');
    fs.writeFileSync(file, bytes);
    return file;
  }

  it('backup:create waits for the backup and returns its attributes', async () => {
    const { server } = await h.make.ownedServer();
    fs.writeFileSync(path.join(h.daemon.volumeDir(server.uuid), 'a.txt'), 'hello');
    const out = await backupCreate.run(ctx(), { server: server.uuid_short, name: 'by admin' });
    expect(out).toMatchObject({ name: 'by admin', is_successful: true, is_locked: false, ignored_files: [] });
    const archive = fs.readFileSync(h.daemon.backupPath(out.uuid as string));
    expect(out.checksum).toBe(`sha1:${createHash('sha1').update(archive).digest('hex')}`);
    expect(out.bytes).toBe(archive.length);
    expect(out.completed_at).not.toBeNull();
    expect(await events(server)).toEqual([
      { event: 'server:backup.start', actor_id: null, properties: { name: 'by admin', locked: false } },
      { event: 'server:backup.complete', actor_id: null, properties: { name: 'by admin' } },
    ]);
  });

  it('backup:create fails (CliError) when the backup fails, the limit is reached, or the server is unknown', async () => {
    const { server } = await h.make.ownedServer({ backupLimit: 1 });
    const spy = vi.spyOn(h.daemon, 'createBackup').mockRejectedValueOnce(new Error('disk full'));
    await expect(backupCreate.run(ctx(), { server: server.uuid })).rejects.toThrow(/disk full/);
    spy.mockRestore();
    expect((await rows(server))[0]).toMatchObject({ is_successful: 0 });

    await backupCreate.run(ctx(), { server: server.uuid }); // the failed one does not count
    await expect(backupCreate.run(ctx(), { server: server.uuid })).rejects.toThrow(CliError);
    expect(await rows(server)).toHaveLength(2);

    const { server: none } = await h.make.ownedServer({ backupLimit: 0 });
    await expect(backupCreate.run(ctx(), { server: none.uuid })).rejects.toThrow(/not capable/);
    await expect(backupCreate.run(ctx(), { server: 'ffffffff' })).rejects.toThrow(CliError);
    await expect(backupCreate.run(ctx(), {})).rejects.toThrow(/--server/);
  });

  it('backup:import copies the file into place and records it as a completed backup', async () => {
    const { server } = await h.make.ownedServer();
    const bytes = gzipSync(Buffer.alloc(2048));
    const file = tempFile(bytes);
    const out = await backupImport.run(ctx(), { server: server.uuid, file, name: 'from old host' });
    expect(out).toMatchObject({
      name: 'from old host',
      is_successful: true,
      is_locked: false,
      checksum: `sha1:${createHash('sha1').update(bytes).digest('hex')}`,
      bytes: bytes.length,
    });
    expect(out.completed_at).toEqual(out.created_at);
    expect(fs.readFileSync(h.daemon.backupPath(out.uuid as string))).toEqual(bytes);
    expect(fs.existsSync(file)).toBe(true); // copied, not moved
    expect(await events(server)).toEqual([
      { event: 'server:backup.complete', actor_id: null, properties: { name: 'from old host' } },
    ]);
  });

  it('backup:import counts toward the limit and leaves nothing behind when refused', async () => {
    const { server } = await h.make.ownedServer({ backupLimit: 1 });
    const file = tempFile(gzipSync(Buffer.from('x')));
    await backupImport.run(ctx(), { server: server.uuid, file });
    const backupsBefore = fs.readdirSync(h.daemon.paths.backups).sort();
    await expect(backupImport.run(ctx(), { server: server.uuid, file })).rejects.toThrow(/limit of 1/);
    await expect(backupCreate.run(ctx(), { server: server.uuid })).rejects.toThrow(/limit of 1/);
    expect(fs.readdirSync(h.daemon.paths.backups).sort()).toEqual(backupsBefore);
    expect(await rows(server)).toHaveLength(1);

    await expect(backupImport.run(ctx(), { server: server.uuid, file: `/nonexistent/${randomUUID()}.tar.gz` })).rejects.toThrow(
      CliError,
    );
    await expect(backupImport.run(ctx(), { server: server.uuid, file: os.tmpdir() })).rejects.toThrow(/not a regular file/);
    await expect(backupImport.run(ctx(), { server: server.uuid })).rejects.toThrow(/--file/);
  });

  it('a scheduled backup (rotate) replaces the oldest unlocked backup at the limit, never a locked one', async () => {
    const { server } = await h.make.ownedServer({ backupLimit: 2 });
    const make = (name: string, locked: number) =>
      insertBackup(h.db.db, {
        uuid: randomUUID(),
        server_id: server.id,
        name,
        ignored_files: '[]',
        checksum: `sha1:${'c'.repeat(40)}`,
        bytes: 1,
        is_successful: 1,
        is_locked: locked,
        created_at: h.clock.now(),
        completed_at: h.clock.now(),
      });
    await make('locked old', 1);
    h.clock.advance(1000);
    await make('old', 0);
    h.clock.advance(1000);
    const created = await startBackup(h.deps, server, SYSTEM_ACTOR, { rotate: true, name: 'scheduled' });
    await h.jobs.idle();
    expect((await rows(server)).map((r) => r.name)).toEqual(['locked old', 'scheduled']);
    expect((await events(server)).map((e) => [e.event, e.properties])).toEqual([
      ['server:backup.delete', { name: 'old', failed: false }],
      ['server:backup.start', { name: 'scheduled', locked: false }],
      ['server:backup.complete', { name: 'scheduled' }],
    ]);
    expect(created.name).toBe('scheduled');

    // With every backup locked there is nothing to rotate out.
    await h.db.db.updateTable('backups').set({ is_locked: 1 }).where('server_id', '=', server.id).execute();
    await expect(startBackup(h.deps, server, SYSTEM_ACTOR, { rotate: true })).rejects.toMatchObject({
      status: 400,
      code: 'ServiceLimitExceededException',
    });
  });
});
