/**
 * The TCP echo server and client the network benchmarks share
 * (bench/containment.ts, bench/network-floor.ts): a Python server that
 * answers `ping` lines with `pong` (or counts a `sink` stream), and the
 * client's round-trip and throughput measurements, so that every figure of
 * either benchmark is taken the same way.
 */
import net from 'node:net';
import { percentile } from './stats.js';

/** TCP on 0.0.0.0:SERVER_PORT: `ping` lines answered with `pong`, `sink` read to EOF and its byte count answered. */
export const ECHO_PY = `
import os, socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', int(os.environ['SERVER_PORT']))); s.listen(8)
open('ready', 'w').close()
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    kind = c.recv(5)
    if kind == b'sink\\n':
        n = 0
        while True:
            b = c.recv(1 << 20)
            if not b: break
            n += len(b)
        c.sendall(f"{n}\\n".encode())
    else:
        f = c.makefile('rb')
        c.sendall(b'pong\\n')
        for line in f: c.sendall(b'pong\\n')
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

const elapsedMs = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

/** Median round trip (ms) of `pings` one-line exchanges on one connection to host:port. */
export async function medianRoundTripMs(host: string, port: number, pings: number): Promise<number> {
  const socket = net.connect({ host, port, noDelay: true });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const times: number[] = [];
  let waiting: (() => void) | null = null;
  let buffered = '';
  socket.on('data', (chunk) => {
    buffered += chunk.toString();
    while (buffered.includes('\n')) {
      buffered = buffered.slice(buffered.indexOf('\n') + 1);
      waiting?.();
    }
  });
  for (let i = 0; i <= pings; i++) {
    const start = process.hrtime.bigint();
    await new Promise<void>((resolve) => {
      waiting = resolve;
      socket.write('ping\n');
    });
    if (i > 0) times.push(elapsedMs(start));
  }
  socket.destroy();
  return percentile(
    times.sort((a, b) => a - b),
    50,
  );
}

/** MB/s of `megabytes` sent to host:port and counted by the server. */
export async function throughputMBps(host: string, port: number, megabytes: number): Promise<number> {
  const socket = net.connect({ host, port });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const chunk = Buffer.alloc(1 << 20, 7);
  const start = process.hrtime.bigint();
  const answer = new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (data) => (text += data.toString()));
    socket.on('end', () => resolve(text));
  });
  socket.write('sink\n');
  for (let i = 0; i < megabytes; i++) {
    if (!socket.write(chunk)) await new Promise((resolve) => socket.once('drain', resolve));
  }
  socket.end();
  const counted = Number((await answer).trim());
  if (counted !== megabytes * chunk.length) throw new Error(`the server counted ${counted} bytes`);
  return megabytes / (elapsedMs(start) / 1000);
}
