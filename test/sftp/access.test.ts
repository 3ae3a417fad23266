import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { RECHECK_MS } from '../../src/modules/sftp/sftp.server.js';
import { hashPassword } from '../../src/modules/users/passwords.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { userWithPassword } from '../helpers/sign-in.js';
import type { Harness } from '../helpers/harness.js';
import { connectClient, loopbackAddress, openSftp, scratch, sftpBatch, useSftpHarness, volumeOf } from './helpers.js';

/** The password a subuser made by the factory is given here. */
const PASSWORD = 'subuser password 1';
const TEST_RECHECK_MS = 1_000;

async function subuserWithPassword(h: Harness, server: ServerRow, permissions: string[]) {
  const sub = await h.make.subuser(server, permissions);
  await h.db.db
    .updateTable('users')
    .set({ password: await hashPassword(PASSWORD) })
    .where('id', '=', sub.user.id)
    .execute();
  return sub;
}

/** Who may sign in, what each operation needs, and sessions that lose their access (docs/reference/files-and-sftp.md, docs/reference/accounts.md). */
it("re-reads a session's access often enough to close it within 30 s of a loss", () => {
  // The tests below run with a shorter interval; the service's own is this one.
  expect(RECHECK_MS).toBeLessThanOrEqual(10_000);
});

describeEachDatabase('sftp access', (database) => {
  // Access is re-read every second here (RECHECK_MS in the service, 5 s): a lost session closes within one interval.
  const h = useSftpHarness(database, {}, { recheckMs: TEST_RECHECK_MS });

  it('refuses a wrong password, an unknown user or server, and a server the user cannot see, alike', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const other = await h.make.server((await h.make.user()).user);
    const from = loopbackAddress();
    for (const [login, password] of [
      [`${owner.user.username}.${server.uuid_short}`, 'wrong password'],
      [`nobody_here.${server.uuid_short}`, owner.password],
      [`${owner.user.username}.deadbeef`, owner.password],
      [`${owner.user.username}.${other.uuid_short}`, owner.password],
      [owner.user.username, owner.password],
    ] as const) {
      const result = await sftpBatch(h.sftp.port, login, password, ['ls'], { from });
      expect(result.code, login).toBe(255);
      expect(result.stderr, login).toMatch(/Permission denied/);
    }
    // The right name, password and server: in, by the short identifier or the full UUID.
    expect((await sftpBatch(h.sftp.port, `${owner.user.username}.${server.uuid}`, owner.password, ['ls'], { from })).code).toBe(
      0,
    );
  });

  it('refuses every attempt, the right password too, after 5 failures for one account from one address', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const login = `${owner.user.username}.${server.uuid_short}`;
    const from = loopbackAddress();
    for (let i = 0; i < 5; i++) expect((await sftpBatch(h.sftp.port, login, 'wrong', ['ls'], { from })).code).toBe(255);
    const throttled = await sftpBatch(h.sftp.port, login, owner.password, ['ls'], { from });
    expect(throttled.code).toBe(255);
    expect(h.problems.some((p) => p.includes('throttled'))).toBe(true);
    // Another address is not held back by the first one's failures.
    expect((await sftpBatch(h.sftp.port, login, owner.password, ['ls'], { from: loopbackAddress() })).code).toBe(0);
  });

  it('refuses a subuser without file.sftp, and a suspended, installing or restoring server', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const reader = await subuserWithPassword(h, server, ['file.read', 'file.read-content']);
    const from = loopbackAddress();
    expect((await sftpBatch(h.sftp.port, `${reader.user.username}.${server.uuid_short}`, PASSWORD, ['ls'], { from })).code).toBe(
      255,
    );
    for (const status of ['suspended', 'installing', 'restoring_backup'] as const) {
      await h.make.setStatus(server, status);
      const result = await sftpBatch(h.sftp.port, `${owner.user.username}.${server.uuid_short}`, owner.password, ['ls'], {
        from,
      });
      expect(result.code, status).toBe(255);
    }
  });

  it('lets a subuser with file.sftp and file.read list, and refuses reading, writing, making, renaming and deleting', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const volume = volumeOf(h, server);
    fs.writeFileSync(path.join(volume, 'secret.txt'), 'top secret\n');
    const sub = await subuserWithPassword(h, server, ['file.sftp', 'file.read']);
    const local = scratch();
    fs.writeFileSync(path.join(local, 'upload.txt'), 'hello\n');
    const login = `${sub.user.username}.${server.uuid_short}`;
    const from = loopbackAddress();

    const listed = await sftpBatch(h.sftp.port, login, PASSWORD, ['ls -l'], { cwd: local, from });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/secret\.txt/);

    // `-` lets the batch go on past a failed command; every refusal is reported.
    const refused = await sftpBatch(
      h.sftp.port,
      login,
      PASSWORD,
      [
        '-put upload.txt',
        '-get secret.txt',
        '-mkdir folder',
        '-rename secret.txt moved.txt',
        '-rm secret.txt',
        '-chmod 777 secret.txt',
      ],
      { cwd: local, from },
    );
    expect(refused.code).toBe(0);
    expect(refused.stderr.match(/Permission denied/g)).toHaveLength(6);
    expect(fs.readdirSync(volume)).toEqual(['secret.txt']);
    expect(fs.statSync(path.join(volume, 'secret.txt')).mode & 0o777).not.toBe(0o777);
    expect(fs.existsSync(path.join(local, 'secret.txt'))).toBe(false);
  });

  it('maps open-for-write to file.create for a new file and file.update for an existing one (Wings)', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const volume = volumeOf(h, server);
    fs.writeFileSync(path.join(volume, 'existing.txt'), 'old\n');
    const creator = await subuserWithPassword(h, server, ['file.sftp', 'file.read', 'file.create']);
    const local = scratch();
    fs.writeFileSync(path.join(local, 'existing.txt'), 'new\n');
    fs.writeFileSync(path.join(local, 'fresh.txt'), 'fresh\n');
    const from = loopbackAddress();
    const result = await sftpBatch(
      h.sftp.port,
      `${creator.user.username}.${server.uuid_short}`,
      PASSWORD,
      ['put fresh.txt', '-put existing.txt'],
      {
        cwd: local,
        from,
      },
    );
    expect(result.stderr).toMatch(/existing\.txt.*Permission denied/);
    expect(fs.readFileSync(path.join(volume, 'fresh.txt'), 'utf8')).toBe('fresh\n');
    expect(fs.readFileSync(path.join(volume, 'existing.txt'), 'utf8')).toBe('old\n');
  });

  for (const [what, takeAway] of [
    [
      'the subuser is removed',
      (server: ServerRow, userId: number) =>
        h.db.db.deleteFrom('subusers').where('server_id', '=', server.id).where('user_id', '=', userId).execute(),
    ],
    [
      'file.sftp is revoked',
      (server: ServerRow, userId: number) =>
        h.db.db
          .updateTable('subusers')
          .set({ permissions: JSON.stringify(['file.read']) })
          .where('server_id', '=', server.id)
          .where('user_id', '=', userId)
          .execute(),
    ],
    [
      'the password is changed',
      async (_server: ServerRow, userId: number) =>
        h.db.db
          .updateTable('users')
          .set({ password: await hashPassword('another password') })
          .where('id', '=', userId)
          .execute(),
    ],
    ['the server is suspended', (server: ServerRow) => h.make.setStatus(server, 'suspended')],
    [
      'the account is deleted',
      (_server: ServerRow, userId: number) => h.db.db.deleteFrom('users').where('id', '=', userId).execute(),
    ],
  ] as const) {
    it(`closes a live session within 30 s when ${what}`, async () => {
      const owner = await userWithPassword(h);
      const server = await h.make.server(owner.user);
      const sub = await subuserWithPassword(h, server, ['file.sftp', 'file.read']);
      const client = await connectClient(h.sftp.port, `${sub.user.username}.${server.uuid_short}`, PASSWORD);
      const sftp = await openSftp(client);
      const closed = new Promise<number>((resolve) => client.once('close', () => resolve(Date.now())));
      await new Promise<void>((resolve, reject) => sftp.readdir('/', (err) => (err ? reject(err) : resolve())));
      const lostAt = Date.now();
      await takeAway(server, sub.user.id);
      const closedAt = await closed;
      expect(closedAt - lostAt).toBeLessThan(30_000);
      // Within one re-check interval (and a margin for a busy machine).
      expect(closedAt - lostAt).toBeLessThan(TEST_RECHECK_MS + 2_000);
    }, 40_000);
  }

  it('applies a permission taken away mid-session to the next request, without ending the session', async () => {
    const owner = await userWithPassword(h);
    const server = await h.make.server(owner.user);
    const sub = await subuserWithPassword(h, server, ['file.sftp', 'file.read', 'file.create']);
    const client = await connectClient(h.sftp.port, `${sub.user.username}.${server.uuid_short}`, PASSWORD);
    try {
      const sftp = await openSftp(client);
      const mkdir = (name: string) =>
        new Promise<{ code?: number } | undefined>((resolve) =>
          sftp.mkdir(name, (err) => resolve(err as { code?: number } | undefined)),
        );
      expect(await mkdir('/first')).toBeUndefined();
      await h.db.db
        .updateTable('subusers')
        .set({ permissions: JSON.stringify(['file.sftp', 'file.read']) })
        .where('user_id', '=', sub.user.id)
        .execute();
      // Re-read within the interval; the session stays (file.sftp is still held).
      const deadline = Date.now() + 10_000;
      let refused: { code?: number } | undefined;
      for (let i = 0; !refused && Date.now() < deadline; i++) {
        refused = await mkdir(`/later-${i}`);
        if (!refused) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(refused?.code).toBe(3);
      await new Promise<void>((resolve, reject) => sftp.readdir('/', (err) => (err ? reject(err) : resolve())));
    } finally {
      client.end();
    }
  }, 30_000);
});
