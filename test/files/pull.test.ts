import http from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { refusalOf } from '../../src/modules/files/pull-addresses.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { fileTools } from './files-helpers.js';
import { startPullPeer, type PullPeer } from './pull-peer.js';

const IS_ROOT = process.getuid?.() === 0;

/** A web server on this machine's loopback that counts the requests it gets: a refused pull never reaches it. */
let loopbackHits = 0;
let loopback: http.Server;
let loopbackUrl = '';
let peer: PullPeer;

beforeAll(async () => {
  // No silent skip: the peer needs `ip netns`, so these tests fail, saying why, when not run as root.
  if (!IS_ROOT) throw new Error('test/files/pull.test.ts needs root: its peer runs in a network namespace (ip netns).');
  loopback = http.createServer((_req, res) => {
    loopbackHits++;
    res.end('internal secret');
  });
  await new Promise<void>((resolve) => loopback.listen(0, '127.0.0.1', resolve));
  const { port } = loopback.address() as { port: number };
  loopbackUrl = `http://127.0.0.1:${port}/secret`;
  peer = await startPullPeer(loopbackUrl);
});
afterAll(async () => {
  peer?.close();
  await new Promise((resolve) => loopback?.close(resolve));
});

/**
 * `POST /files/pull` (docs/reference/files-and-sftp.md) against a real peer in a network namespace:
 * public addresses work; loopback, private, link-local, this machine's own
 * addresses, names resolving to them and redirects to them are refused.
 */
describeEachDatabase('file pull', (database) => {
  const h = useHarness(database);
  const f = fileTools(h);
  const pull = (token: string, server: ServerRow, body: Record<string, unknown>) =>
    h.request(token, { method: 'POST', url: f.url(server, 'pull'), payload: body });

  it('pulls from a public address in the foreground, by URL name, by header name, or as told; logs server:file.pull', async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await pull(owner.token, server, { url: `${peer.base}/file`, directory: '/downloads', foreground: true });
    expect(res.statusCode, res.body).toBe(204);
    expect(f.read(server, 'downloads/file')).toBe('pulled content');
    const named = await pull(owner.token, server, {
      url: `${peer.base}/named`,
      directory: '/',
      use_header: true,
      foreground: true,
    });
    expect(named.statusCode).toBe(204);
    expect(f.read(server, 'from header.txt')).toBe('named');
    const told = await pull(owner.token, server, { url: `${peer.base}/to-file`, filename: 'chosen.txt', foreground: '1' });
    expect(told.statusCode).toBe(204);
    expect(f.read(server, 'chosen.txt')).toBe('pulled content');
    const redirected = await pull(owner.token, server, {
      url: `${peer.base}/loop?n=4`,
      filename: 'after-redirects',
      foreground: true,
    });
    expect(redirected.statusCode).toBe(204);
    expect((await f.events(server))[0]).toEqual({
      event: 'server:file.pull',
      properties: { directory: '/downloads', url: `${peer.base}/file`, file: '/downloads/file' },
    });
    expect((await f.events(server)).map((e) => e.event)).toEqual(Array(4).fill('server:file.pull'));
  });

  it('gives each pull a connection of its own: a dozen from one host leave no listener behind on a kept-alive socket', async () => {
    const { owner, server } = await h.make.ownedServer();
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 12; i++) {
        const res = await pull(owner.token, server, { url: `${peer.base}/file`, filename: `copy-${i}`, foreground: true });
        expect(res.statusCode, res.body).toBe(204);
      }
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    expect(f.read(server, 'copy-11')).toBe('pulled content');
  });

  it('in the background by default: 204 at once, the file after; a failure is logged server:file.pull.fail', async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await pull(owner.token, server, { url: `${peer.base}/file` });
    expect(res.statusCode).toBe(204);
    await h.jobs.idle();
    expect(f.read(server, 'file')).toBe('pulled content');
    const missing = await pull(owner.token, server, { url: `${peer.base}/missing` });
    expect(missing.statusCode).toBe(204);
    await h.jobs.idle();
    const events = await f.events(server);
    expect(events[1]).toEqual({
      event: 'server:file.pull.fail',
      properties: { directory: '/', url: `${peer.base}/missing`, error: 'The remote server answered 404.' },
    });
  });

  it('refuses loopback, private, link-local, unspecified and own addresses, names resolving to them and redirects to them', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const url of [
      loopbackUrl,
      'http://127.1.2.3/',
      'http://2130706433/',
      'http://0x7f.0.0.1/',
      'http://[::ffff:7f00:1]/',
      'http://10.1.2.3/',
      'http://172.16.0.1/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://0.0.0.0/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://224.0.0.1/',
      `http://198.51.100.1:${peer.port}/file`,
      `http://localhost:${new URL(loopbackUrl).port}/secret`,
    ]) {
      for (const foreground of [true, false]) {
        const res = await pull(owner.token, server, { url, foreground });
        expect(res.statusCode, `${url}: ${res.body}`).toBe(400);
        expect(res.json().errors[0].code).toBe('BadRequestHttpException');
      }
    }
    for (const url of [`${peer.base}/to-loopback`, `${peer.base}/to-ftp`, `${peer.base}/loop?n=5`]) {
      const res = await pull(owner.token, server, { url, foreground: true });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(400);
    }
    const background = await pull(owner.token, server, { url: `${peer.base}/to-loopback` });
    expect(background.statusCode).toBe(204);
    await h.jobs.idle();
    expect(loopbackHits).toBe(0);
    expect(f.tree(server)).toEqual([]);
    expect((await f.events(server)).map((e) => e.event)).toEqual(['server:file.pull.fail']);
  });

  it('refuses what is not an http(s) URL with a 422', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const url of ['file:///etc/passwd', 'ftp://198.51.100.2/x', 'gopher://a/', 'not a url', 'http://']) {
      const res = await pull(owner.token, server, { url, foreground: true });
      expect(res.statusCode, url).toBe(422);
      expect(res.json().errors[0].meta.source_field).toBe('url');
    }
  });

  it('counts the bytes against the disk limit, with or without a Content-Length: 409, nothing left', async () => {
    const { owner, server } = await h.make.ownedServer({ limits: { diskMiB: 1 } });
    for (const name of ['big', 'nolength']) {
      const res = await pull(owner.token, server, { url: `${peer.base}/${name}`, foreground: true });
      expect(res.statusCode, `${name}: ${res.body}`).toBe(409);
    }
    expect(f.tree(server)).toEqual([]);
  });

  it('needs file.create', async () => {
    const { server } = await h.make.ownedServer();
    const reader = await h.make.subuser(server, ['file.read', 'file.update']);
    expect((await pull(reader.token, server, { url: `${peer.base}/file`, foreground: true })).statusCode).toBe(403);
    const creator = await h.make.subuser(server, ['file.create']);
    expect((await pull(creator.token, server, { url: `${peer.base}/file`, foreground: true })).statusCode).toBe(204);
  });

  it('a filename or directory climbing out of the volume is a 400', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const body of [{ filename: '../../x' }, { directory: '../..' }]) {
      for (const foreground of [true, false]) {
        const res = await pull(owner.token, server, { url: `${peer.base}/file`, foreground, ...body });
        expect(res.statusCode).toBe(400);
      }
    }
    await h.jobs.idle();
    expect(f.tree(server)).toEqual([]);
  });
});

it('the address rules: TEST-NET-2 is public, this machine is not', () => {
  expect(refusalOf('198.51.100.2')).toBeNull();
  expect(refusalOf('8.8.8.8')).toBeNull();
  expect(refusalOf('2606:4700::1111')).toBeNull();
  expect(refusalOf('198.51.100.1')).toBe('an address of this machine');
  for (const blocked of [
    '127.0.0.1',
    '10.0.0.1',
    '100.127.255.255',
    '169.254.169.254',
    '::',
    '::1',
    'fe80::1',
    'fc00::1',
    'ff02::1',
    '::ffff:10.0.0.1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    '240.0.0.1',
    '255.255.255.255',
  ]) {
    expect(refusalOf(blocked), blocked).not.toBeNull();
  }
});
