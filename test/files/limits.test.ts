import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { fileTools, localPart, multipartBody } from './files-helpers.js';

const MIB = 1024 * 1024;

/** Sends `head` (request line and headers) and nothing else; resolves with what the server answers. */
function headersOnly(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
    let answer = '';
    socket.setTimeout(5000, () => {
      socket.destroy();
      reject(new Error(`no answer without the body; got: ${answer}`));
    });
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (answer.includes('\r\n\r\n') && /\}\]\}$/.test(answer)) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}

/**
 * Bounds (docs/reference/containment.md, docs/reference/files-and-sftp.md): UPLOAD_LIMIT_MB on uploads and writes (refused before
 * the body is read when its length is declared, while streaming when not),
 * and the server's disk limit on write, upload, copy, decompress: 409 and
 * nothing left behind.
 */
describeEachDatabase('file limits', (database) => {
  const h = useHarness(database, { UPLOAD_LIMIT_MB: '1' });
  const f = fileTools(h);
  let port = 0;
  beforeAll(async () => {
    const address = await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = Number(new URL(address).port);
  });
  afterAll(async () => {
    await h.app.close();
  });

  async function uploadUrl(token: string, server: ServerRow) {
    return (await h.request(token, { method: 'GET', url: f.url(server, 'upload') })).json().attributes.url as string;
  }

  it('an upload declaring more than UPLOAD_LIMIT_MB is refused (413) before its body is sent', async () => {
    const { owner, server } = await h.make.ownedServer();
    const url = await uploadUrl(owner.token, server);
    const answer = await headersOnly(
      port,
      `POST ${localPart(url)} HTTP/1.1\r\nHost: quetzal.test\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: ${10 * MIB}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('"code":"PayloadTooLargeHttpException"');
    expect(f.tree(server)).toEqual([]);
  });

  it('a write declaring more than UPLOAD_LIMIT_MB is refused (413) before its body is sent', async () => {
    const { owner, server } = await h.make.ownedServer();
    const answer = await headersOnly(
      port,
      `POST ${f.url(server, 'write?file=big')} HTTP/1.1\r\nHost: quetzal.test\r\nAuthorization: Bearer ${owner.token}\r\n` +
        `Content-Type: text/plain\r\nContent-Length: ${10 * MIB}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(f.tree(server)).toEqual([]);
  });

  it('an upload or write without a length is cut at UPLOAD_LIMIT_MB while streaming, leaving no file', async () => {
    const { owner, server } = await h.make.ownedServer();
    const url = await uploadUrl(owner.token, server);
    const body = multipartBody([
      { filename: 'small', content: 'ok' },
      { filename: 'big', content: Buffer.alloc(MIB + 10, 1) },
    ]);
    const chunked = (payload: Buffer) =>
      new ReadableStream({
        start(controller) {
          controller.enqueue(payload);
          controller.close();
        },
      });
    const up = await fetch(`http://127.0.0.1:${port}${localPart(url)}`, {
      method: 'POST',
      body: chunked(body.payload),
      headers: { 'content-type': body.contentType },
      duplex: 'half',
    } as RequestInit);
    expect(up.status).toBe(413);
    expect(f.tree(server)).toEqual(['small']);

    const write = await fetch(`http://127.0.0.1:${port}${f.url(server, 'write?file=big')}`, {
      method: 'POST',
      body: chunked(Buffer.alloc(MIB + 10, 1)),
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/octet-stream' },
      duplex: 'half',
    } as RequestInit);
    expect(write.status).toBe(413);
    expect(f.tree(server)).toEqual(['small']);
    expect((await f.events(server)).map((e) => e.event)).toEqual(['server:file.uploaded']);
  });

  {
    const limited = () => h.make.ownedServer({ limits: { diskMiB: 1 } });
    const disk = (server: ServerRow) => h.daemon.diskUsage({ uuid: server.uuid, startup: null, stopCommand: null });

    it('write past the disk limit: 409, nothing left', async () => {
      const { owner, server } = await limited();
      const res = await h.request(owner.token, {
        method: 'POST',
        url: f.url(server, 'write?file=big'),
        payload: Buffer.alloc(900_000, 1),
      });
      expect(res.statusCode).toBe(204);
      const over = await h.request(owner.token, {
        method: 'POST',
        url: f.url(server, 'write?file=more'),
        payload: Buffer.alloc(300_000, 1),
      });
      expect(over.statusCode).toBe(409);
      expect(over.json().errors[0].status).toBe('409');
      expect(f.tree(server)).toEqual(['big']);
      expect(await disk(server)).toBeLessThanOrEqual(MIB);
    });

    it('upload past the disk limit: 409, nothing left of the part that did not fit', async () => {
      const { owner, server } = await limited();
      f.put(server, { base: Buffer.alloc(700_000, 1) });
      const body = multipartBody([{ filename: 'x', content: Buffer.alloc(500_000, 2) }]);
      const res = await h.app.inject({
        method: 'POST',
        url: localPart(await uploadUrl(owner.token, server)),
        payload: body.payload,
        headers: { 'content-type': body.contentType },
      });
      expect(res.statusCode).toBe(409);
      expect(f.tree(server)).toEqual(['base']);
    });

    it('copy past the disk limit: 409, no copy', async () => {
      const { owner, server } = await limited();
      f.put(server, { a: Buffer.alloc(600_000, 1) });
      const res = await h.request(owner.token, { method: 'POST', url: f.url(server, 'copy'), payload: { location: 'a' } });
      expect(res.statusCode).toBe(409);
      expect(f.tree(server)).toEqual(['a']);
    });

    it('decompress past the disk limit: 409, nothing unpacked', async () => {
      const { owner, server } = await limited();
      const work = path.join(h.dataDir, `pack-${server.uuid}`);
      fs.mkdirSync(path.join(work, 'content'), { recursive: true });
      fs.writeFileSync(path.join(work, 'content', 'zeros'), Buffer.alloc(3 * MIB));
      execFileSync('tar', ['-czf', path.join(f.volume(server), 'bomb.tar.gz'), '-C', work, 'content']);
      const res = await h.request(owner.token, {
        method: 'POST',
        url: f.url(server, 'decompress'),
        payload: { root: '/', file: 'bomb.tar.gz' },
      });
      expect(res.statusCode).toBe(409);
      expect(f.tree(server)).toEqual(['bomb.tar.gz']);
    });
  }
});
