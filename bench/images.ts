/**
 * Images benchmark (docs/reference/eggs-and-installs.md, docs/IMAGES.md), through the local daemon the
 * service uses, with containment on:
 *
 * - build: wall time of `images.build` (mmdebstrap from Debian's mirror, the
 *   rootfs prepared, switched in) for PACKAGES on SUITE, and the image's size
 *   on disk;
 * - start: wall time from `power(server, 'start')` until the server's first
 *   console line reaches a console watcher, for a server on the image and one
 *   on `host`, alternating in the same run, RUNS each; medians, p95 and the
 *   ratio of the medians;
 * - sharing: SERVERS servers started on the image at once, running; `du` of
 *   DATA_DIR/images and of the volumes against SERVERS copies of the image
 *   (target: the image once).
 *
 * Needs root, runc, conmon, mmdebstrap and the Debian mirror. Leaves nothing
 * behind (its folder is removed), except after a SIGKILL: then
 * `runc --root <dir>/run/runc list` names what to delete.
 *
 *   npm run bench:images -- [--packages "busybox"] [--suite bookworm] [--runs 20] [--servers 50]
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { DaemonServer } from '../src/daemon/daemon.js';
import { resolveContainment } from '../src/daemon/local/container/container-runtime.js';
import { LocalDaemon } from '../src/daemon/local/local-daemon.js';
import { formatMs, percentile, table } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    packages: { type: 'string', default: 'busybox' },
    suite: { type: 'string', default: 'bookworm' },
    runs: { type: 'string', default: '20' },
    servers: { type: 'string', default: '50' },
  },
});
const RUNS = Number(values.runs);
const SERVERS = Number(values.servers);
const IMAGE = `bench/${values.suite}:${values.packages.trim().split(/\s+/).join('+')}`;

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-images-'));
const runtime = await resolveContainment(
  { mode: 'on', uid: 988, dataDir: root, runDir: path.join(root, 'run') },
  { warn: () => undefined },
).catch((err: unknown) => {
  console.error(String(err));
  process.exit(1);
});
const daemon = new LocalDaemon(root, { containers: runtime, stopGraceMs: 2_000 });
await daemon.start();

const elapsedMs = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const du = (dir: string) => Number(execFileSync('du', ['-s', '-B1', dir], { encoding: 'utf8' }).split(/\s/)[0]);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

function newServer(image: string | null): DaemonServer {
  return { uuid: randomUUID(), startup: 'echo ready; exec sleep 1000', stopCommand: null, image };
}

/** Start call until the first console line, then the server is killed. */
async function timeStart(image: string | null): Promise<number> {
  const server = newServer(image);
  await daemon.prepareVolume(server);
  let stopWatching = () => {};
  const firstLine = new Promise<void>((resolve) => {
    stopWatching = daemon.watchConsole(server, () => resolve());
  });
  const start = process.hrtime.bigint();
  await daemon.power(server, 'start');
  await firstLine;
  const ms = elapsedMs(start);
  stopWatching();
  await daemon.power(server, 'kill');
  return ms;
}

try {
  console.log(`building ${IMAGE} (packages: ${values.packages}; suite: ${values.suite}) ...`);
  const buildStart = process.hrtime.bigint();
  const image = await daemon.images.build(IMAGE, { packages: values.packages.split(/\s+/), suite: values.suite });
  const buildMs = elapsedMs(buildStart);
  console.log(`\nbuild: ${(buildMs / 1000).toFixed(1)} s, ${mib(image.sizeBytes)} on disk\n`);

  const onImage: number[] = [];
  const onHost: number[] = [];
  await timeStart(IMAGE); // warm-up: page cache, runc's binary
  await timeStart(null);
  for (let i = 0; i < RUNS; i++) {
    onImage.push(await timeStart(IMAGE));
    onHost.push(await timeStart(null));
  }
  onImage.sort((a, b) => a - b);
  onHost.sort((a, b) => a - b);
  console.log(
    table(
      ['start → first console line', 'median ms', 'p95 ms'],
      [
        [`on ${IMAGE}`, formatMs(percentile(onImage, 50)), formatMs(percentile(onImage, 95))],
        ['on host', formatMs(percentile(onHost, 50)), formatMs(percentile(onHost, 95))],
      ],
    ),
  );
  console.log(`ratio image/host (medians): ${(percentile(onImage, 50) / percentile(onHost, 50)).toFixed(2)}\n`);

  const servers = Array.from({ length: SERVERS }, () => newServer(IMAGE));
  const sharingStart = process.hrtime.bigint();
  for (const server of servers) {
    await daemon.prepareVolume(server);
    await daemon.power(server, 'start');
  }
  const startAllMs = elapsedMs(sharingStart);
  const states = await Promise.all(servers.map((server) => daemon.state(server)));
  const imagesBytes = du(path.join(root, 'images'));
  const volumesBytes = du(path.join(root, 'volumes'));
  console.log(
    table(
      [`${SERVERS} servers on ${IMAGE}`, 'value'],
      [
        ['running', String(states.filter((state) => state === 'running').length)],
        ['started one after another in', `${(startAllMs / 1000).toFixed(1)} s`],
        ['du images/', mib(imagesBytes)],
        ['du volumes/', mib(volumesBytes)],
        ['images/ + volumes/', mib(imagesBytes + volumesBytes)],
        [`${SERVERS} copies of the image would be`, mib(SERVERS * image.sizeBytes)],
      ],
    ),
  );
  await Promise.all(servers.map((server) => daemon.power(server, 'kill')));
} finally {
  await daemon.close();
  fs.rmSync(root, { recursive: true, force: true });
}
