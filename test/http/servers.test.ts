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

