import { expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { hashPassword } from '../../src/modules/users/passwords.js';
import { describeEachDatabase } from '../helpers/databases.js';
import type { Harness } from '../helpers/harness.js';
import { userWithPassword } from '../helpers/sign-in.js';
import { connectClient, openSftp, useSftpHarness } from '../sftp/helpers.js';
import { connected, useLiveHarness } from '../websocket/helpers.js';

/**
 * docs/reference/accounts.md: removing a subuser, or taking a permission away, through the
 * client API ends that subuser's live console sockets and SFTP sessions
 * within 30 s (the hub's and the SFTP server's access re-checks).
 */
const users = (server: ServerRow) => `/api/client/servers/${server.uuid_short}/users`;

async function addSubuser(h: Harness, ownerToken: string, server: ServerRow, email: string, permissions: string[]) {
  const res = await h.request(ownerToken, { method: 'POST', url: users(server), payload: { email, permissions } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ attributes: { uuid: string } }>().attributes.uuid;
}

describeEachDatabase('subuser removal ends live sockets', (database) => {
  const h = useLiveHarness(database);

  it('DELETE /users/{user} closes the subuser’s socket at the next re-check', async () => {
    const { owner, server } = await h.make.ownedServer();
    const sub = await h.make.user();
    const uuid = await addSubuser(h, owner.token, server, sub.user.email, ['control.console']);
    const socket = await connected(h, sub.token, server);
    expect((await h.request(owner.token, { method: 'DELETE', url: `${users(server)}/${uuid}` })).statusCode).toBe(204);
    h.clock.advance(31_000);
    expect((await socket.closed).code).toBe(4403);
  });

  it('POST /users/{user} keeps websocket.connect (Pterodactyl adds it) and a console permission taken away is refused at once', async () => {
    const { owner, server } = await h.make.ownedServer();
    const sub = await h.make.user();
    const uuid = await addSubuser(h, owner.token, server, sub.user.email, ['control.console']);
    const socket = await connected(h, sub.token, server);
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `${users(server)}/${uuid}`,
      payload: { permissions: ['control.start'] },
    });
    expect(res.json().attributes.permissions).toEqual(['control.start', 'websocket.connect']);
    socket.send('send command', ['say hi']);
    expect((await socket.waitFor('daemon error')).args).toEqual(['This action is unauthorized.']);
    socket.close();
  });
});

const PASSWORD = 'subuser password 1';
const RECHECK_MS = 1_000;

describeEachDatabase('subuser removal ends SFTP sessions', (database) => {
  const h = useSftpHarness(database, {}, { recheckMs: RECHECK_MS });

  for (const [what, change] of [
    [
      'the subuser is removed',
      (uuid: string, server: ServerRow) => ({ method: 'DELETE' as const, url: `${users(server)}/${uuid}` }),
    ],
    [
      'file.sftp is taken away',
      (uuid: string, server: ServerRow) => ({
        method: 'POST' as const,
        url: `${users(server)}/${uuid}`,
        payload: { permissions: ['file.read'] },
      }),
    ],
  ] as const) {
    it(`closes a live session within 30 s when ${what} through the API`, async () => {
      const owner = await userWithPassword(h);
      const server = await h.make.server(owner.user);
      const sub = await h.make.user();
      await h.db.db
        .updateTable('users')
        .set({ password: await hashPassword(PASSWORD) })
        .where('id', '=', sub.user.id)
        .execute();
      const uuid = await addSubuser(h, owner.token, server, sub.user.email, ['file.sftp', 'file.read']);
      const client = await connectClient(h.sftp.port, `${sub.user.username}.${server.uuid_short}`, PASSWORD);
      const sftp = await openSftp(client);
      const closed = new Promise<number>((resolve) => client.once('close', () => resolve(Date.now())));
      await new Promise<void>((resolve, reject) => sftp.readdir('/', (err) => (err ? reject(err) : resolve())));
      const lostAt = Date.now();
      const res = await h.request(owner.token, change(uuid, server));
      expect(res.statusCode).toBeLessThan(300);
      const closedAt = await closed;
      expect(closedAt - lostAt).toBeLessThan(30_000);
    }, 40_000);
  }
});
