import fs from 'node:fs';
import path from 'node:path';
import type { Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { ServerRow } from '../../src/db/schema.js';
import { SEND_BUFFER_LIMIT } from '../../src/modules/websocket/websocket.frames.js';
import { daemonServer } from '../../src/modules/servers/servers.service.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { connected, eventually, socketAddress, useLiveHarness, websocketCredentials } from './helpers.js';

/** 190-character lines in 190 KB writes, on the console line "flood": about 30 MB of output, then "flood done". */
const FLOOD_SERVER = `
import { createInterface } from 'node:readline';
console.log('ready');
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line !== 'flood') return;
  const chunk = ('x'.repeat(190) + '\\n').repeat(1000);
  let left = 160;
  const write = () => {
    while (left > 0) {
      left -= 1;
      if (!process.stdout.write(chunk)) return void process.stdout.once('drain', write);
    }
    console.log('flood done');
  };
  write();
});
`;

/** A slow client never grows the service's memory (docs/reference/power-and-console.md#websocket): past 1 MiB waiting for it, it is dropped. */
describeEachDatabase('websocket backpressure', (database) => {
  // About backpressure, not the throttle (docs/reference/power-and-console.md#servers-outlive-the-service, console-throttle.test.ts): every line of the flood goes out.
  const h = useLiveHarness(database, { CONSOLE_THROTTLE_LINES: '100000000' });
  const started: ServerRow[] = [];
  afterEach(async () => {
    for (const server of started.splice(0)) await h.daemon.power(daemonServer(server), 'kill').catch(() => undefined);
    await h.jobs.idle();
  });

  it('drops a client that stops reading while a flood of output goes out, keeps the reading one, and buffers at most ~1 MiB per socket', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: 'node flood-server.mjs' });
    started.push(server);
    const volume = h.daemon.volumeDir(server.uuid);
    fs.writeFileSync(path.join(volume, 'flood-server.mjs'), FLOOD_SERVER, { mode: 0o644 });

    const reader = await connected(h, owner.token, server);
    reader.send('set state', ['start']);
    await reader.waitFor('console output', (f) => f.args?.[0] === 'ready', 10_000);
    // From here on the reader counts lines without keeping them (its memory is this process's too).
    reader.ws.removeAllListeners('message');
    reader.frames.length = 0;
    let linesRead = 0;
    let floodDone = false;
    reader.ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { event: string; args?: string[] };
      if (frame.event !== 'console output') return;
      linesRead += 1;
      if (frame.args?.[0] === 'flood done') floodDone = true;
    });

    // The slow client authenticates, then its socket stops reading.
    const slow = new WebSocket(socketAddress(h, server));
    await new Promise<void>((resolve, reject) => {
      slow.once('open', () => resolve());
      slow.once('error', reject);
    });
    const slowClosed = new Promise<number>((resolve) => slow.on('close', (code) => resolve(code)));
    const authed = new Promise<void>((resolve) =>
      slow.on('message', (data: Buffer) => String(data).includes('auth success') && resolve()),
    );
    slow.send(JSON.stringify({ event: 'auth', args: [(await websocketCredentials(h, owner.token, server)).token] }));
    await authed;
    (slow as unknown as { _socket: Socket })._socket.pause();
    expect(h.app.websocketServer.clients.size).toBe(2);

    let peakBuffered = 0;
    const sampler = setInterval(() => {
      for (const client of h.app.websocketServer.clients) peakBuffered = Math.max(peakBuffered, client.bufferedAmount);
    }, 2);
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const rssSampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20);
    try {
      reader.send('send command', ['flood']);
      await eventually(() => floodDone, 60_000, 'the reading client to see the whole flood');
      // Dropped: gone from the service's sockets while the reader is still there.
      await eventually(() => h.app.websocketServer.clients.size === 1, 5_000, 'the slow client to be dropped');
    } finally {
      clearInterval(sampler);
      clearInterval(rssSampler);
    }
    expect(linesRead).toBeGreaterThan(150_000);
    expect(reader.ws.readyState).toBe(WebSocket.OPEN);
    // What the service held for any one client: the limit, and the one frame that crossed it.
    expect(peakBuffered).toBeLessThanOrEqual(SEND_BUFFER_LIMIT + 64 * 1024);
    // 30 MB went through; the process did not keep it (generous: the reader's parsing is in this process too).
    expect(rssPeak - rssBefore).toBeLessThan(150 * 1024 * 1024);

    // Once it reads again, the slow client learns it was dropped (its connection is gone: 1006, or 4413 if the close frame made it).
    (slow as unknown as { _socket: Socket })._socket.resume();
    expect([1006, 4413]).toContain(await slowClosed);
    reader.close();
  });
});
