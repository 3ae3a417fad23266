import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

describeEachDatabase('servers', (database) => {
  const h = useHarness(database);

  it('shows a server by UUID and by short identifier', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const ref of [server.uuid, server.uuid_short]) {
      const res = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${ref}` });
      expect(res.statusCode).toBe(200);
      expect(res.json().object).toBe('server');
      expect(res.json().attributes.uuid).toBe(server.uuid);
      expect(res.json().attributes.identifier).toBe(server.uuid_short);
    }
  });

  it("says in meta whether the caller owns the server and what the caller may do on it, as Pterodactyl's front end reads", async () => {
    const { owner, server } = await h.make.ownedServer();
    const ownerView = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid}` });
    expect(ownerView.json().meta).toEqual({ is_server_owner: true, user_permissions: ['*'] });
    const subuser = await h.make.subuser(server, ['control.start', 'control.console']);
    const subuserView = await h.request(subuser.token, { method: 'GET', url: `/api/client/servers/${server.uuid}` });
    expect(subuserView.json().meta).toEqual({ is_server_owner: false, user_permissions: ['control.console', 'control.start'] });
    const admin = await h.make.user({ admin: true });
    const adminView = await h.request(admin.token, { method: 'GET', url: `/api/client/servers/${server.uuid}` });
    expect(adminView.json().meta).toEqual({ is_server_owner: false, user_permissions: ['*'] });
  });

  it('is a 404 for a server the caller cannot see', async () => {
    const { server } = await h.make.ownedServer();
    const stranger = await h.make.user();
    const res = await h.request(stranger.token, { method: 'GET', url: `/api/client/servers/${server.uuid}` });
    expect(res.statusCode).toBe(404);
    expect(res.json().errors[0]).toEqual({ code: 'NotFoundHttpException', status: '404', detail: expect.any(String) });
  });

  it('lists visible servers with pagination meta', async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await h.request(owner.token, { method: 'GET', url: '/api/client' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.object).toBe('list');
    expect(body.data.map((s: { attributes: { uuid: string } }) => s.attributes.uuid)).toEqual([server.uuid]);
    expect(body.meta.pagination).toMatchObject({ total: 1, count: 1, current_page: 1, total_pages: 1, links: {} });
  });
});
