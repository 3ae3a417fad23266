/**
 * After a power cut the machine reboots: the restore its previous boot was
 * running belongs to a process of that boot, which certainly died. The next
 * start finishes it at once, before the API listens, without waiting for the
 * lease (which, written just before the cut, may have long to run).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { claimantDiedOrRebooted, instanceIdentity } from '../../src/instance.js';
import { CLI_DIALECTS, createSandbox, quetzalJson } from '../cli/helpers.js';
import { plantAbandonedRestore, serve, statusOf } from './helpers.js';

const self = instanceIdentity('test');
const host = os.hostname().replace(/[|\s]/g, '_').slice(0, 64);
const earlierBoot = self.bootId === '000000000000' ? '111111111111' : '000000000000';

// Without a boot id (no /proc/sys/kernel/random/boot_id) nothing can be told from it, and nothing is.
it.skipIf(self.bootId === 'noboot')(
  'a claimant of this machine name in another boot is dead here; of another name, or this boot and alive, it is not',
  () => {
    expect(claimantDiedOrRebooted(`quetzal|${host}|${earlierBoot}|${process.pid}|abcd`, self)).toBe(true);
    expect(claimantDiedOrRebooted(`quetzal|another-machine|${earlierBoot}|12345|abcd`, self)).toBe(false);
    expect(claimantDiedOrRebooted(`quetzal|${host}|${self.bootId}|${process.ppid}|abcd`, self)).toBe(false);
    expect(claimantDiedOrRebooted('not an instance id', self)).toBe(false);
  },
);

describe.skipIf(self.bootId === 'noboot').concurrent('a restore of the previous boot', () => {
  for (const dialect of CLI_DIALECTS) {
    it(`is finished at the next start, before the API listens [${dialect}]`, { timeout: 60_000 }, async () => {
      const box = await createSandbox(dialect);
      try {
        await quetzalJson(['user:create', '--username', 'owner', '--email', 'owner@example.com'], box.env);
        const { token } = await quetzalJson(['key:create', '--user', 'owner'], box.env);
        const { uuid: server } = await quetzalJson(['server:create', '--owner', 'owner', '--name', 'rebooted'], box.env);
        const volume = path.join(box.dataDir, 'volumes', server as string);
        fs.writeFileSync(path.join(volume, 'a.txt'), 'old a');
        const { uuid: backupUuid } = await quetzalJson(['backup:create', '--server', server as string], box.env);
        // Truncate, cut off while emptying: a.txt already moved aside, b.txt not yet.
        const planted = await plantAbandonedRestore(box.db().db, {
          server: server as string,
          backup: backupUuid as string,
          truncate: true,
          owner: `quetzal|${host}|${earlierBoot}|${process.pid}|abcd`,
          leaseExpiresAt: Date.now() + 3_600_000,
        });
        const folder = planted.folder(box.dataDir);
        fs.mkdirSync(path.join(folder, 'staged'), { recursive: true });
        fs.mkdirSync(path.join(folder, 'displaced'));
        fs.writeFileSync(path.join(folder, 'staged', 'a.txt'), 'restored a');
        fs.renameSync(path.join(volume, 'a.txt'), path.join(folder, 'displaced', 'a.txt'));
        fs.writeFileSync(path.join(volume, 'b.txt'), 'old b, not in the backup');
        fs.writeFileSync(
          path.join(folder, 'journal.json'),
          JSON.stringify({ version: 1, volume: server, truncate: true, phase: 'emptying' }),
        );

        const service = await serve(box.env);
        try {
          expect(await statusOf(service, token as string, server as string)).toBeNull();
          expect(fs.readdirSync(volume)).toEqual(['a.txt']);
          expect(fs.readFileSync(path.join(volume, 'a.txt'), 'utf8')).toBe('restored a');
          expect(fs.existsSync(folder)).toBe(false);
        } finally {
          await service.stop();
        }
      } finally {
        await box.dispose();
      }
    });
  }
});
