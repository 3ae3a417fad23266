/**
 * What the server-network tests share: a local daemon with containment on
 * (real runc, real namespaces, the real nftables table), servers whose
 * startup scripts (python3 from the host's read-only /usr, in their volume)
 * act as tenants and write what they saw into their volume, random high
 * ports, and the clean-up that leaves no container, namespace or table.
 * Needs root, runc, ip and nft: without them the tests fail, saying so.
 */
import { execFileSync } from 'node:child_process';
import { randomInt, randomUUID } from 'node:crypto';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import type { DaemonServer, ServerAllocation } from '../../../../src/daemon/daemon.js';
import { resolveContainment, type ContainerRuntime } from '../../../../src/daemon/local/container/container-runtime.js';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';
import { requireRunc, SERVER_UID } from '../container/helpers.js';

export { SERVER_UID };
/** This machine's own address (not loopback): what players elsewhere would use. */
export const HOST_ADDRESS = '192.0.2.2';

const cleanups: (() => Promise<void> | void)[] = [];

/**
 * Runs `cleanup` when the current test ends, the last registered first. Bound
 * to the test (onTestFinished), never a module-level afterEach: test files
 * share this module (vitest's isolate: false), and a hook registered when it
 * was first loaded would belong to the first file only.
 */
export function onCleanup(cleanup: () => Promise<void> | void): void {
  if (cleanups.length === 0) {
    onTestFinished(async () => {
      for (const next of cleanups.splice(0).reverse()) await next();
    });
  }
  cleanups.push(cleanup);
}

/** A port no test is likely to use at the same time. */
export function randomPort(): number {
  return randomInt(30_000, 60_000);
}

export interface NetworkDaemon {
  readonly daemon: LocalDaemon;
  readonly runtime: ContainerRuntime;
  readonly dataDir: string;
}

export async function networkDaemon(dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-net-'))): Promise<NetworkDaemon> {
  requireRunc();
  const runtime = await resolveContainment(
    { mode: 'on', uid: SERVER_UID, dataDir, runDir: path.join(dataDir, 'run') },
    { warn: () => undefined },
  );
  if (runtime === null) throw new Error('containment was not resolved');
  const daemon = new LocalDaemon(dataDir, { stopGraceMs: 500, containers: runtime });
  await daemon.start();
  onCleanup(async () => {
    await daemon.close();
    for (const container of await runtime.runc.list())
      await runtime.runc.delete(container.id, { force: true }).catch(() => undefined);
    // Whatever a test left on purpose (a fake crash) goes with a sweep that owns nothing.
    await runtime.network.sweep(() => false);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { daemon, runtime, dataDir };
}

/** Stops and removes whatever runs on `dataDir` (a crash test's instance left it), as a next start would, then the folder. */
export async function reapDataDir(dataDir: string): Promise<void> {
  if (!fs.existsSync(dataDir)) return;
  const runtime = await resolveContainment(
    { mode: 'on', uid: SERVER_UID, dataDir, runDir: path.join(dataDir, 'run') },
    { warn: () => undefined },
  );
  if (runtime === null) return;
  const daemon = new LocalDaemon(dataDir, { stopGraceMs: 500, containers: runtime });
  await daemon.start();
  await daemon.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

export function server(startup: string, allocations?: ServerAllocation[]): DaemonServer {
  return { uuid: randomUUID(), startup, stopCommand: null, ...(allocations ? { allocations } : {}) };
}

/** Puts `files` into the server's volume (readable by the server's uid) before its start. */
export async function withFiles(daemon: LocalDaemon, target: DaemonServer, files: Record<string, string>): Promise<void> {
  await daemon.prepareVolume(target);
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(daemon.volumeDir(target.uuid), name);
    fs.writeFileSync(file, content, { mode: 0o644 });
    fs.chownSync(file, SERVER_UID, SERVER_UID);
  }
}

export async function eventually<T>(
  check: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A file the server wrote into its volume, once it is there whole (written as .partial, then renamed). */
export async function volumeFile(daemon: LocalDaemon, target: DaemonServer, name: string, timeoutMs = 15_000): Promise<string> {
  const file = path.join(daemon.volumeDir(target.uuid), name);
  return eventually(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8'), timeoutMs, `${name} in the volume`);
}

/** The server's inside address, from its network record. */
export function insideAddress(dataDir: string, serverUuid: string): string {
  const record = JSON.parse(fs.readFileSync(path.join(dataDir, 'run/network', `${serverUuid}.json`), 'utf8')) as {
    inside: string;
  };
  return record.inside;
}

export function nftTable(tableName: string): string | null {
  try {
    return execFileSync('nft', ['list', 'table', 'ip', tableName], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

/**
 * A tenant's listener: TCP and UDP on 0.0.0.0:SERVER_PORT; answers each TCP
 * connection and UDP datagram with `name`, SERVER_IP, SERVER_PORT and the
 * peer's address; TCP `sink` reads to EOF and answers the byte count.
 */
export const ECHO_TENANT = `
import os, socket, threading
port = int(os.environ.get('SERVER_PORT', '0'))
name = open('name.txt').read().strip()
def answer(peer):
    return f"{name} {os.environ.get('SERVER_IP')} {os.environ.get('SERVER_PORT')} {peer}\\n".encode()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
def tcp():
    while True:
        c, peer = s.accept()
        threading.Thread(target=serve, args=(c, peer), daemon=True).start()
def serve(c, peer):
    try:
        first = c.recv(5)
        if first == b'sink\\n':
            n = 0
            while True:
                b = c.recv(1 << 16)
                if not b: break
                n += len(b)
            c.sendall(f"{n}\\n".encode())
        elif first == b'ping\\n':
            f = c.makefile('rb')
            c.sendall(b'pong\\n')
            for line in f: c.sendall(b'pong\\n')
        else:
            c.sendall(answer(peer[0]))
            # Read to the client's EOF: closing with unread bytes would send a reset instead of the answer.
            while c.recv(1024): pass
    finally:
        c.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def udp():
    while True:
        data, peer = u.recvfrom(2048); u.sendto(answer(peer[0]), peer)
# Both bound before 'ready': a test that sees it may connect at once.
s.bind(('0.0.0.0', port)); s.listen(64)
u.bind(('0.0.0.0', port))
threading.Thread(target=udp, daemon=True).start()
open('ready.partial', 'w').write('ready'); os.rename('ready.partial', 'ready')
tcp()
`;

/**
 * A tenant that tries to connect to each `label host port` line of
 * targets.txt (TCP, 1.5 s each, all at once; host GATEWAY = its default
 * gateway, the host side of its own pair) and writes `label ok <answer>`
 * or `label fail <why>` per line to report.txt; then sleeps.
 */
export const PROBE_TENANT = `
import os, socket, threading
def gateway():
    for line in open('/proc/net/route').read().splitlines()[1:]:
        f = line.split()
        if f[1] == '00000000': return socket.inet_ntoa(bytes.fromhex(f[2])[::-1])
targets = [line.split() for line in open('targets.txt').read().splitlines() if line.strip()]
targets = [[label, gateway() if host == 'GATEWAY' else host, port] for label, host, port in targets]
results = {}
def probe(label, host, port):
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(1.5)
    try:
        s.connect((host, int(port)))
        s.sendall(b'hello\\n')
        answer = s.recv(200).decode(errors='replace').strip().replace(' ', '_')
        results[label] = 'ok ' + (answer or '-')
    except Exception as e:
        results[label] = 'fail ' + type(e).__name__
    finally:
        s.close()
threads = [threading.Thread(target=probe, args=t) for t in targets]
for t in threads: t.start()
for t in threads: t.join()
with open('report.partial', 'w') as f:
    for label, _, _ in targets: f.write(f"{label} {results[label]}\\n")
os.rename('report.partial', 'report.txt')
import time
while True: time.sleep(60)
`;

/** report.txt as label → 'ok …' | 'fail …'. */
export function parseReport(text: string): Map<string, string> {
  return new Map(
    text
      .trim()
      .split('\n')
      .map((line) => {
        const [label, ...rest] = line.split(' ');
        return [label!, rest.join(' ')] as const;
      }),
  );
}

/** Sends `payload` and a newline, half-closes, and resolves with everything the other side answered. */
export function tcpAsk(host: string, port: number, payload = 'hello', timeoutMs = 3_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let data = '';
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer from ${host}:${port}`)));
    socket.on('connect', () => socket.end(`${payload}\n`));
    socket.on('data', (chunk) => (data += chunk.toString()));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

/** One datagram out, the first one back. */
export function udpAsk(host: string, port: number, timeoutMs = 3_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no UDP answer from ${host}:${port}`));
    }, timeoutMs);
    socket.on('message', (message) => {
      clearTimeout(timer);
      socket.close();
      resolve(message.toString());
    });
    socket.send('hello', port, host);
  });
}
