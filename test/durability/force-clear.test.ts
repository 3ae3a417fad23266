/**
 * docs/reference/configuration.md `server:status --set none --force` (docs/reference/backups-and-restores.md#durability): clears a restore stuck
 * in `restoring_backup` — its row, its status, its folder (settled first, so a
 * move that had begun is finished, never dropped halfway). Without --force the
 * status is refused as before.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeEachDialect, quetzal, quetzalJson, useSandbox } from '../cli/helpers.js';
import { plantAbandonedRestore } from './helpers.js';

describeEachDialect('server:status --force', (dialect) => {
  const box = useSandbox(dialect);

  it('clears a stuck restore: row, status, event and folder; refused without --force', async () => {
    await quetzalJson(['user:create', '--username', 'owner', '--email', 'owner@example.com'], box.env);
    const { uuid: server } = await quetzalJson(['server:create', '--owner', 'owner', '--name', 'stuck'], box.env);
    const volume = path.join(box.dataDir, 'volumes', server as string);
    fs.writeFileSync(path.join(volume, 'a.txt'), 'old a');
    const { uuid: backupUuid } = await quetzalJson(['backup:create', '--server', server as string, '--name', 'base'], box.env);

    // A restore whose owner lives elsewhere (so nothing recovers it), stopped mid-move: b.txt moved in, a.txt not yet.
    const db = box.db().db;
    const planted = await plantAbandonedRestore(db, {
      server: server as string,
      backup: backupUuid as string,
      truncate: false,
      owner: 'quetzal|elsewhere|0123456789ab|4242|abcd',
      leaseExpiresAt: Date.now() + 3_600_000,
    });
    const serverRow = { id: planted.serverId };
    const folder = planted.folder(box.dataDir);
    fs.mkdirSync(path.join(folder, 'staged'), { recursive: true });
    fs.writeFileSync(path.join(folder, 'staged', 'a.txt'), 'restored a');
    fs.writeFileSync(path.join(volume, 'b.txt'), 'restored b');
    fs.writeFileSync(
      path.join(folder, 'journal.json'),
      JSON.stringify({ version: 1, volume: server, truncate: false, phase: 'filling' }),
    );

    for (const args of [
      ['--set', 'none'],
      ['--set', 'suspended', '--force'],
    ]) {
      const refused = await quetzal(['server:status', '--server', server as string, ...args, '--json'], box.env);
      expect(refused.code, args.join(' ')).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(/restoring a backup/);
    }
    expect(fs.existsSync(folder)).toBe(true);

    const cleared = await quetzalJson(['server:status', '--server', server as string, '--set', 'none', '--force'], box.env);
    expect(cleared).toEqual({ uuid: server, status: null });
    const after = await db.selectFrom('servers').select('status').where('id', '=', serverRow.id).executeTakeFirstOrThrow();
    expect(after.status).toBeNull();
    expect(await db.selectFrom('backup_restores').selectAll().where('server_id', '=', serverRow.id).execute()).toEqual([]);
    const events = await db
      .selectFrom('activity_logs')
      .select(['event', 'properties'])
      .where('server_id', '=', serverRow.id)
      .execute();
    expect(events.map((e) => [e.event, JSON.parse(e.properties)])).toContainEqual([
      'server:backup.restore-failed',
      { name: 'base', reason: 'forced' },
    ]);
    // The move that had begun was finished, not dropped: the volume is the restored tree, the folder gone.
    expect(fs.readFileSync(path.join(volume, 'a.txt'), 'utf8')).toBe('restored a');
    expect(fs.readFileSync(path.join(volume, 'b.txt'), 'utf8')).toBe('restored b');
    expect(fs.readdirSync(path.join(box.dataDir, 'volumes')).filter((n) => n.startsWith('.restore-'))).toEqual([]);

    // An ordinary status change works again.
    expect(await quetzalJson(['server:status', '--server', server as string, '--set', 'suspended'], box.env)).toEqual({
      uuid: server,
      status: 'suspended',
    });
  });
});
