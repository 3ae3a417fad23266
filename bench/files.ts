/**
 * Files benchmark (issue 19, docs/reference/files-and-sftp.md): one function per figure, each with a
 * same-run baseline, so that further figures (listing through the API,
 * 1 GiB upload/download over HTTP against cp, over SFTP against OpenSSH's
 * sftp) can be added as functions of their own.
 *
 *   (a) listing a folder of 100,000 files: LocalFiles.list against `ls -l`
 *   (b) compress of a 300 MiB volume: LocalFiles.compress (gzip level 1)
 *       against `tar -cf - . | pigz -1`, and the same tar stream at gzip
 *       levels 1 and 6 (zlib's default) into nothing, to show what level 1 saves
 *
 * Then the figures measured by scripts of their own (PARTS below), each in a
 * child process after these, so `npm run bench:files` prints them all:
 *
 *   (c), (d) bench/file-routes.ts: listing through the API against `ls -l`,
 *       write / upload / download of a 1 GiB file over HTTP against `cp`
 *   (e) bench/sftp.ts: put and get of a 1 GiB file through Quetzal's SFTP
 *       against `cp` and OpenSSH's sftp to this machine's sshd
 *
 *   npm run bench:files -- [--runs 3] [--files 100000] [--mib 300] [--http-mib 1024]
 */
import { execFileSync, execSync, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { createGzip } from 'node:zlib';
import type { DaemonServer } from '../src/daemon/daemon.js';
import { tarStreamOfEntries } from '../src/daemon/local/archive/tar-stream.js';
import { LocalFiles } from '../src/daemon/local/files/local-files.js';
import { SafeDir } from '../src/daemon/local/volume/safe-dir.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    files: { type: 'string', default: '100000' },
    mib: { type: 'string', default: '300' },
    'http-mib': { type: 'string', default: '1024' },
  },
});
const RUNS = Number(values.runs);
const LIST_FILES = Number(values.files);
const VOLUME_MIB = Number(values.mib);

interface Setup {
  root: string;
  volume: string;
  server: DaemonServer;
  files: LocalFiles;
}

function setup(): Setup {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-files-'));
  const uuid = randomUUID();
  const volume = path.join(root, 'volumes', uuid);
  fs.mkdirSync(volume, { recursive: true });
  const files = new LocalFiles({
    volumeDir: (id) => path.join(root, 'volumes', id),
    backupPath: (id) => path.join(root, `${id}.tar.gz`),
    ownerOf: () => undefined,
    volumeUsage: async () => ({ bytes: 0, inodes: 0 }),
  });
  return { root, volume, server: { uuid, startup: null, stopCommand: null }, files };
}

const ms = (started: number) => performance.now() - started;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** (a) A folder of LIST_FILES small files: LocalFiles.list (every entry lstat'ed) against `ls -l` (sorted, formatted). */
async function listingFigure(s: Setup): Promise<void> {
  const folder = path.join(s.volume, 'many');
  fs.mkdirSync(folder);
  for (let i = 0; i < LIST_FILES; i++) fs.writeFileSync(path.join(folder, `file-${i}.txt`), 'x');
  const ours: number[] = [];
  const ls: number[] = [];
  let heldMs = 0;
  for (let run = 0; run < RUNS; run++) {
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    let started = performance.now();
    const entries = await s.files.list(s.server, 'many');
    ours.push(ms(started));
    delay.disable();
    heldMs = Math.max(heldMs, delay.max / 1e6);
    if (entries.length !== LIST_FILES) throw new Error(`listed ${entries.length} of ${LIST_FILES}`);
    started = performance.now();
    execFileSync('ls', ['-l', folder], { stdio: ['ignore', 'ignore', 'inherit'], maxBuffer: 1 << 30 });
    ls.push(ms(started));
  }
  console.log(
    `(a) list ${LIST_FILES} files: LocalFiles.list median ${median(ours).toFixed(0)} ms ` +
      `[${ours.map((v) => v.toFixed(0)).join(', ')}], ls -l median ${median(ls).toFixed(0)} ms ` +
      `[${ls.map((v) => v.toFixed(0)).join(', ')}]; ratio ${(median(ours) / median(ls)).toFixed(2)}; ` +
      `event loop held at most ${heldMs.toFixed(1)} ms`,
  );
  fs.rmSync(folder, { recursive: true });
}

/** A VOLUME_MIB volume like a game server's: half incompressible (worlds, jars), half text-like (logs, configs). */
function fillVolume(s: Setup): void {
  const fileBytes = 2 * 1024 * 1024;
  const count = Math.ceil((VOLUME_MIB * 1024 * 1024) / fileBytes);
  const line = Buffer.from('[12:00:00] [Server thread/INFO]: Player joined the game at x=1024 y=64 z=-512\n');
  for (let i = 0; i < count; i++) {
    const dir = path.join(s.volume, 'data', `d${i % 10}`);
    fs.mkdirSync(dir, { recursive: true });
    const body =
      i % 2 === 0
        ? randomBytes(fileBytes)
        : Buffer.concat(
            Array.from({ length: Math.ceil(fileBytes / line.length) }, (_, n) => (n % 7 ? line : randomBytes(line.length))),
          ).subarray(0, fileBytes);
    fs.writeFileSync(path.join(dir, `f${i}.bin`), body);
  }
}

/** The tar stream of `data` gzipped at `level` into nothing: the cost of the level alone. */
async function gzipToNothing(s: Setup, level: number): Promise<{ ms: number; bytes: number }> {
  const dir = SafeDir.open(s.volume);
  let bytes = 0;
  const started = performance.now();
  try {
    await pipeline(
      Readable.from(tarStreamOfEntries(dir, ['data']), { objectMode: false }),
      createGzip({ level }),
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          done();
        },
      }),
    );
  } finally {
    dir.close();
  }
  return { ms: ms(started), bytes };
}

/** (b) compress of the volume's `data` folder, against `tar -cf - data | pigz -1` on the same tree. */
async function compressFigure(s: Setup): Promise<void> {
  fillVolume(s);
  for (let run = 0; run < RUNS; run++) {
    let started = performance.now();
    const made = await s.files.compress(s.server, '/', ['data']);
    const oursMs = ms(started);
    fs.rmSync(path.join(s.volume, made.path));
    const out = path.join(s.root, 'pigz.tar.gz');
    started = performance.now();
    execSync(`tar -cf - data | pigz -1 > ${JSON.stringify(out)}`, { cwd: s.volume });
    const pigzMs = ms(started);
    const pigzBytes = fs.statSync(out).size;
    fs.rmSync(out);
    const level1 = await gzipToNothing(s, 1);
    const level6 = await gzipToNothing(s, 6);
    console.log(
      `(b) compress ${VOLUME_MIB} MiB run ${run + 1}: LocalFiles.compress (gzip 1) ${oursMs.toFixed(0)} ms, ${(made.entry.size / 2 ** 20).toFixed(1)} MiB; ` +
        `tar | pigz -1 ${pigzMs.toFixed(0)} ms, ${(pigzBytes / 2 ** 20).toFixed(1)} MiB; ratio ${(oursMs / pigzMs).toFixed(2)}; ` +
        `tar stream to nothing: gzip 1 ${level1.ms.toFixed(0)} ms, ${(level1.bytes / 2 ** 20).toFixed(1)} MiB; ` +
        `gzip 6 ${level6.ms.toFixed(0)} ms, ${(level6.bytes / 2 ** 20).toFixed(1)} MiB`,
    );
  }
}

/**
 * The figures other scripts measure, run in order with these arguments after
 * (a) and (b). A new figure is one line here.
 */
const PARTS: { script: string; args: string[] }[] = [
  { script: 'bench/file-routes.ts', args: ['--runs', String(RUNS), '--files', String(LIST_FILES), '--mib', values['http-mib']!] },
  { script: 'bench/sftp.ts', args: [] },
];

/** Runs each of PARTS in a process of its own (tsx, as npm's scripts do), its output passed through. */
function runParts(): void {
  for (const part of PARTS) {
    console.log(`--- ${part.script} ${part.args.join(' ')}`);
    const run = spawnSync(process.execPath, ['--import', 'tsx', part.script, ...part.args], { stdio: 'inherit' });
    if (run.status !== 0) throw new Error(`${part.script} failed (${run.status ?? run.signal})`);
  }
}

const s = setup();
try {
  console.log(
    `node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  await listingFigure(s);
  await compressFigure(s);
} finally {
  fs.rmSync(s.root, { recursive: true, force: true });
}
runParts();
