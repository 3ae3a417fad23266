import type { AddressInfo } from 'node:net';
import { beforeAll, expect } from 'vitest';
import { WebSocket } from 'ws';
import type { ServerRow } from '../../src/db/schema.js';
import type { TestDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';

/** The harness's app listening on a real port (websockets need one): `base` is its http:// origin. */
export interface LiveHarness extends Harness {
  base: string;
}

export function useLiveHarness(database: TestDatabase, env: Record<string, string> = {}): LiveHarness {
  const h = useHarness(database, env) as LiveHarness;
  beforeAll(async () => {
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    h.base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  });
  return h;
}

/** Polls until `check` holds, failing after `timeoutMs`. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface WireFrame {
  event: string;
  args?: string[];
}

/** A test client: every frame it receives is kept, in order; `waitFor` finds them. */
export class TestSocket {
  readonly frames: WireFrame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Frames before this index were already matched by `waitFor`. */
  private cursor = 0;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => this.frames.push(JSON.parse(data.toString('utf8')) as WireFrame));
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })));
  }

  static async open(url: string): Promise<TestSocket> {
    const ws = new WebSocket(url);
    const socket = new TestSocket(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return socket;
  }

  send(event: string, args?: string[]): void {
    this.ws.send(JSON.stringify(args ? { event, args } : { event }));
  }

  /** The next frame (after those already matched) with this event, and matching `where` if given (generous: real processes, busy CI). */
  async waitFor(event: string, where: (frame: WireFrame) => boolean = () => true, timeoutMs = 15_000): Promise<WireFrame> {
    let found: WireFrame | undefined;
    await eventually(
      () => {
        const index = this.frames.findIndex((f, i) => i >= this.cursor && f.event === event && where(f));
        if (index === -1) return false;
        found = this.frames[index];
        this.cursor = index + 1;
        return true;
      },
      timeoutMs,
      `frame "${event}"`,
    );
    return found!;
  }

  /** Frames with this event received so far. */
  all(event: string): WireFrame[] {
    return this.frames.filter((f) => f.event === event);
  }

  /** Console lines received so far. */
  lines(): string[] {
    return this.all('console output').map((f) => f.args?.[0] ?? '');
  }

  close(): void {
    this.ws.close();
  }
}

/** GET /servers/{server}/websocket as `token`'s user: the answer's data. */
export async function websocketCredentials(
  h: Harness,
  token: string,
  server: ServerRow,
): Promise<{ token: string; socket: string }> {
  const res = await h.request(token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/websocket` });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { data: { token: string; socket: string } }).data;
}

/** The socket's address on the test's real port (the token route names APP_URL's host). */
export function socketAddress(h: LiveHarness, server: ServerRow): string {
  return `${h.base.replace(/^http/, 'ws')}/api/servers/${server.uuid}/ws`;
}

/** Opens a socket to the server and authenticates as `token`'s user; resolves once `auth success` and `status` came. */
export async function connected(h: LiveHarness, token: string, server: ServerRow): Promise<TestSocket> {
  const { token: jwt } = await websocketCredentials(h, token, server);
  const socket = await TestSocket.open(socketAddress(h, server));
  socket.send('auth', [jwt]);
  await socket.waitFor('auth success');
  await socket.waitFor('status');
  return socket;
}
