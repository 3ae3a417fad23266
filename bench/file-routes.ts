/**
 * File routes benchmark (issue 19, docs/reference/files-and-sftp.md): the service alone in its own
 * process (bench/files-lib/route-server.ts: the real app, SQLite, the local
 * daemon), the client curl in processes of its own, like a user's:
 *
 *   (c) GET /files/list of a folder of 100,000 files (`curl -s -o /dev/null`),
 *       against `ls -l` of the folder to /dev/null
 *   (d) a --mib MiB file: POST /files/write (`curl -T file -X POST`), POST to a
 *       signed upload URL (`curl -F files=@file`, multipart) and GET of a signed
 *       download URL (`curl -s -o /dev/null`), against `cp` of the same file
 *       (and `cp` then `sync -f`, since a write fsyncs before its rename);
 *       with the service process's RSS growth while each runs (sampled every
 *       10 ms from /proc: the bytes stream, it must stay flat); and the same
 *       `curl -T` to a C server (bench/files-lib/http-sink.c, built with `cc`)
 *       that only discards the body, and one that splice(2)s it into a file and
 *       fsyncs it, and `curl -o /dev/null` from one that sendfile(2)s the file:
 *       the floor any HTTP server pays on this machine
 *
 * Each figure runs --runs times; medians, the spread, and the ratio to the
 * same-run baseline are printed. FILES_CPU_PROF=<dir> runs the service under
 * `node --cpu-prof` into <dir>.
 *
 *   npm run bench:file-routes -- [--runs 3] [--files 100000] [--mib 1024]
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { memoryOf } from './lib/memory.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    files: { type: 'string', default: '100000' },
    mib: { type: 'string', default: '1024' },
  },
  strict: false,
});
const RUNS = Number(values.runs);
const FILES = Number(values.files);
const MIB = 1024 * 1024;
const BYTES = Number(values.mib) * MIB;

interface Service {
  pid: number;
  base: string;
  token: string;
  server: string;
  volume: string;
  stop: () => Promise<void>;
}

async function startService(dataDir: string): Promise<Service> {
  const profile = process.env.FILES_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.FILES_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'bench/files-lib/route-server.ts'], {
    env: { ...process.env, DATA_DIR: dataDir, UPLOAD_LIMIT_MB: String(Math.ceil(BYTES / MIB) + 16) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the service exited (${code}) before it listened`)));
  });
  const info = JSON.parse(line) as Omit<Service, 'pid' | 'stop'>;
  return {
    ...info,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Timed<T> {
  ms: number;
  /** CPU the service used meanwhile: the machine is shared, so this is the figure load does not move. */
  serviceCpuMs: number;
  rssGrowthMiB: number;
  result: T;
}

/** After a `sync`, the wall time of `work`, the service's CPU time, and its peak RSS growth (MiB) while it runs, sampled every 10 ms. */
function timed<T>(pid: number, work: () => T): Timed<T> {
  // Each starts with nothing dirty in the page cache: the gigabyte the last one wrote would
  // otherwise be written back during this one, and throttle whichever writer met it.
  execFileSync('sync');
  const cpu0 = cpuMsOf(pid);
  // The work is a synchronous child process; sampling runs in a helper shell loop, read when it ends.
  const start = memoryOf(pid).rssMiB;
  const sampler = spawn('sh', ['-c', `while :; do grep VmRSS /proc/${pid}/status; sleep 0.01; done`], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let samples = '';
  sampler.stdout.on('data', (d: Buffer) => (samples += d.toString()));
  const t0 = performance.now();
  const result = work();
  const ms = performance.now() - t0;
  sampler.kill('SIGKILL');
  const kbs = [...samples.matchAll(/VmRSS:\s+(\d+) kB/g)].map((m) => Number(m[1]) / 1024);
  const peak = Math.max(start, memoryOf(pid).rssMiB, ...kbs);
  return { ms, serviceCpuMs: cpuMsOf(pid) - cpu0, rssGrowthMiB: peak - start, result };
}

function curl(args: string[]): string {
  const out = spawnSync('curl', ['-s', '-S', '--fail-with-body', ...args], { maxBuffer: 256 * MIB, encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`curl ${args.join(' ')} failed (${out.status}): ${out.stderr}${out.stdout}`);
  return out.stdout;
}

interface Sink {
  url: string;
  stop: () => void;
}

/** bench/files-lib/http-sink.c, built into `dir` with `cc`; null (and why, on stderr) where there is no compiler. */
function buildSink(dir: string): string | null {
  const binary = path.join(dir, 'http-sink');
  const built = spawnSync('cc', ['-O2', '-o', binary, path.join(import.meta.dirname, 'files-lib', 'http-sink.c')], {
    encoding: 'utf8',
  });
  if (built.status === 0) return binary;
  console.error(`(no C floor: cc failed: ${built.error?.message ?? built.stderr})`);
  return null;
}

const started: Sink[] = [];

async function startSink(binary: string, args: string[]): Promise<Sink> {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`http-sink exited (${code}) before it listened`)));
  });
  const sink = { url: `http://127.0.0.1:${port}/`, stop: () => child.kill('SIGKILL') };
  started.push(sink);
  return sink;
}

function sh(command: string, args: string[]): void {
  execFileSync(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[]) =>
  `[${[...xs]
    .sort((a, b) => a - b)
    .map((x) => x.toFixed(0))
    .join(', ')}]`;
const summary = (label: string, xs: number[]) => `${label} median ${median(xs).toFixed(0)} ms ${spread(xs)}`;
const rate = (ms: number) => `${(BYTES / MIB / (ms / 1000)).toFixed(0)} MiB/s`;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-file-routes-'));
  const service = await startService(dataDir);
  const auth = ['-H', `Authorization: Bearer ${service.token}`];
  const files = (rest: string) => `${service.base}/api/client/servers/${service.server}/files/${rest}`;
  const signed = (route: string) => {
    const link = new URL((JSON.parse(curl([...auth, files(route)])) as { attributes: { url: string } }).attributes.url);
    return `${service.base}${link.pathname}${link.search}`;
  };
  try {
    console.log(
      `(service pid ${service.pid}; load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')})`,
    );
    const many = path.join(service.volume, 'many');
    fs.mkdirSync(many);
    for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(many, `file-${i}.txt`), '');
    const listed = JSON.parse(curl([...auth, files('list?directory=many')])) as { data: unknown[] };
    if (listed.data.length !== FILES) throw new Error(`listed ${listed.data.length} of ${FILES}`);
    const list: number[] = [];
    const ls: number[] = [];
    let listRss = 0;
    for (let run = 0; run < RUNS; run++) {
      const got = timed(service.pid, () => curl(['-o', '/dev/null', ...auth, files('list?directory=many')]));
      list.push(got.ms);
      listRss = Math.max(listRss, got.rssGrowthMiB);
      ls.push(timed(service.pid, () => sh('sh', ['-c', `ls -l ${JSON.stringify(many)} > /dev/null`])).ms);
    }
    console.log(
      `(c) list ${FILES} files: ${summary('GET /files/list (curl)', list)}; ${summary('ls -l', ls)}; ` +
        `ratio ${(median(list) / median(ls)).toFixed(2)} (target <= 2); service RSS +${listRss.toFixed(0)} MiB`,
    );
    fs.rmSync(many, { recursive: true });

    const source = path.join(dataDir, 'source.bin');
    sh('sh', ['-c', `head -c ${BYTES} /dev/urandom > ${JSON.stringify(source)}`]);
    const copy = path.join(path.dirname(service.volume), 'copy.bin');
    const rows: Record<string, Timed<unknown>[]> = { write: [], upload: [], download: [], cp: [], 'cp+sync': [] };
    const sinkBinary = buildSink(dataDir);
    const sinks = sinkBinary
      ? {
          discard: await startSink(sinkBinary, ['discard']),
          splice: await startSink(sinkBinary, ['splice', copy]),
          send: await startSink(sinkBinary, ['send', source]),
        }
      : null;
    if (sinks) Object.assign(rows, { 'C discard': [], 'C splice': [], 'C send': [] });
    const baseline = () => {
      rows.cp!.push(timed(service.pid, () => sh('cp', [source, copy])));
      fs.rmSync(copy);
      rows['cp+sync']!.push(timed(service.pid, () => sh('sh', ['-c', `cp "$0" "$1" && sync -f "$1"`, source, copy])));
      fs.rmSync(copy);
      if (!sinks) return;
      rows['C discard']!.push(timed(service.pid, () => curl(['-o', '/dev/null', '-X', 'POST', '-T', source, sinks.discard.url])));
      rows['C splice']!.push(timed(service.pid, () => curl(['-o', '/dev/null', '-X', 'POST', '-T', source, sinks.splice.url])));
      if (fs.statSync(copy).size !== BYTES) throw new Error('C splice: wrong size');
      fs.rmSync(copy);
      rows['C send']!.push(timed(service.pid, () => curl(['-o', '/dev/null', sinks.send.url])));
    };
    for (let run = 0; run < RUNS; run++) {
      // Baselines before and after ours in alternate runs, so a burst of load does not fall on one side only.
      if (run % 2 === 0) baseline();
      rows.write!.push(
        timed(service.pid, () => curl(['-o', '/dev/null', ...auth, '-X', 'POST', '-T', source, files('write?file=big.bin')])),
      );
      if (fs.statSync(path.join(service.volume, 'big.bin')).size !== BYTES) throw new Error('write: wrong size');
      const download = signed('download?file=big.bin');
      rows.download!.push(timed(service.pid, () => curl(['-o', '/dev/null', download])));
      const upload = `${signed('upload')}&directory=/`;
      rows.upload!.push(timed(service.pid, () => curl(['-o', '/dev/null', '-F', `files=@${source};filename=up.bin`, upload])));
      if (fs.statSync(path.join(service.volume, 'up.bin')).size !== BYTES) throw new Error('upload: wrong size');
      if (run % 2 === 1) baseline();
    }
    console.log(
      `(d) ${BYTES / MIB} MiB file, curl in its own process; "of cp" = cp's time / ours in the same run ` +
        `(throughput as a share of cp's; target >= 0.5), median [spread]; service CPU = its user+system time:`,
    );
    const ratios = (ours: Timed<unknown>[], base: Timed<unknown>[]) => ours.map((r, i) => base[i]!.ms / r.ms);
    const fmtRatios = (xs: number[]) =>
      `${median(xs).toFixed(2)} [${[...xs]
        .sort((x, y) => x - y)
        .map((x) => x.toFixed(2))
        .join(', ')}]`;
    for (const [name, runs] of Object.entries(rows)) {
      const ms = runs.map((r) => r.ms);
      const cpu = `service CPU ${median(runs.map((r) => r.serviceCpuMs)).toFixed(0)} ms`;
      const line = `  ${summary(name.padEnd(8), ms)} ${rate(median(ms))}`;
      if (name.startsWith('cp') || name.startsWith('C ')) {
        console.log(name.startsWith('C ') ? `${line}; of cp ${fmtRatios(ratios(runs, rows.cp!))}` : line);
        continue;
      }
      const rss = `service RSS +${Math.max(...runs.map((r) => r.rssGrowthMiB)).toFixed(0)} MiB max`;
      const floor = name === 'download' ? 'C send' : 'C splice';
      const ofFloor = sinks ? `, of ${floor} ${fmtRatios(ratios(runs, rows[floor]!))}` : '';
      console.log(
        `${line}; of cp ${fmtRatios(ratios(runs, rows.cp!))}, of cp+sync ${fmtRatios(ratios(runs, rows['cp+sync']!))}` +
          `${ofFloor}; ${cpu}; ${rss}`,
      );
    }
  } finally {
    for (const sink of started) sink.stop();
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
