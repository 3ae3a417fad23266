/**
 * File routes benchmark (issue 19, SPEC 15), through the real app over real
 * HTTP on loopback (SQLite, the local daemon, in this process):
 *
 *   (a) GET /files/list of a folder of 100,000 files, against `ls -l` of it
 *   (b) POST /files/write of a streamed body, POST to a signed upload URL
 *       (multipart, chunked) and GET of a signed download URL, each of
 *       --mib MiB, against `cp` of a file of that size; with this process's
 *       RSS growth while each runs (the bytes stream: it must stay flat)
 *
 *   npm run bench:file-routes -- [--runs 3] [--files 100000] [--mib 512]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.js';
import { BackgroundJobs } from '../src/background.js';
import { loadConfig } from '../src/config.js';
import { LocalDaemon } from '../src/daemon/local/local-daemon.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createApiKey } from '../src/modules/keys/keys.service.js';
import { createServer } from '../src/modules/servers/servers.service.js';
import { createUser } from '../src/modules/users/users.repository.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    files: { type: 'string', default: '100000' },
    mib: { type: 'string', default: '512' },
  },
});
const RUNS = Number(values.runs);
const FILES = Number(values.files);
const MIB = 1024 * 1024;
const BYTES = Number(values.mib) * MIB;

/** Peak RSS growth (MiB) of this process while `work` runs, sampled every 10 ms. */
async function measured<T>(work: () => Promise<T>): Promise<{ ms: number; rssGrowthMiB: number; result: T }> {
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const t0 = performance.now();
  const result = await work();
  const ms = performance.now() - t0;
  clearInterval(timer);
  return { ms, rssGrowthMiB: (Math.max(peak, process.memoryUsage().rss) - start) / MIB, result };
}

function stream(parts: { head?: Buffer; bytes: number; tail?: Buffer }): ReadableStream<Uint8Array> {
  const chunk = Buffer.alloc(MIB, 65);
  let sent = -1;
  return new ReadableStream({
    pull(controller) {
      if (sent === -1) {
        sent = 0;
        if (parts.head) return controller.enqueue(parts.head);
      }
      if (sent >= parts.bytes) {
        if (parts.tail) controller.enqueue(parts.tail);
        return controller.close();
      }
      controller.enqueue(chunk);
      sent += chunk.length;
    },
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-file-routes-'));
  const url = `sqlite:${path.join(dataDir, 'db.sqlite')}`;
  const handle = openDatabase(url);
  await migrateToLatest(handle);
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    UPLOAD_LIMIT_MB: String(BYTES / MIB + 1),
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  const daemon = new LocalDaemon(dataDir, { stopGraceMs: 500 });
  await daemon.start();
  const jobs = new BackgroundJobs({ error: () => {} });
  const now = Date.now();
  const owner = await createUser(handle.db, { username: 'bench', email: 'bench@example.test', rootAdmin: false, now });
  const { token } = await createApiKey(handle.db, { userId: owner.id, description: 'bench', allowedIps: [], now });
  const server = await createServer(handle.db, daemon, { ownerId: owner.id, name: 'bench', now });
  const app = await buildApp(
    { db: handle.db, dialect: handle.dialect, config, clock: { now: () => Date.now() }, daemon, jobs },
    { logger: false },
  );
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  const auth = { authorization: `Bearer ${token}` };
  const files = (rest: string) => `${base}/api/client/servers/${server.uuid_short}/files/${rest}`;
  const volume = daemon.volumeDir(server.uuid);
  try {
    const many = path.join(volume, 'many');
    fs.mkdirSync(many);
    for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(many, `file-${i}.txt`), '');
    const list: number[] = [];
    const ls: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const { ms, result } = await measured(async () => {
        const res = await fetch(files('list?directory=many'), { headers: auth });
        return (await res.json()) as { data: unknown[] };
      });
      if (result.data.length !== FILES) throw new Error(`listed ${result.data.length} of ${FILES}`);
      list.push(ms);
      const t0 = performance.now();
      execFileSync('ls', ['-l', many], { maxBuffer: 1024 * MIB, stdio: ['ignore', 'pipe', 'ignore'] });
      ls.push(performance.now() - t0);
    }
    console.log(
      `(a) list ${FILES} files: GET /files/list median ${median(list).toFixed(0)} ms; ls -l median ${median(ls).toFixed(0)} ms`,
    );

    const rows: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const write = await measured(() =>
        fetch(files('write?file=big.bin'), {
          method: 'POST',
          headers: { ...auth, 'content-length': String(BYTES) },
          body: stream({ bytes: BYTES }),
          duplex: 'half',
        } as RequestInit),
      );
      if (write.result.status !== 204) throw new Error(`write answered ${write.result.status}`);

      const downloadLink = (
        (await (await fetch(files('download?file=big.bin'), { headers: auth })).json()) as { attributes: { url: string } }
      ).attributes.url;
      const local = new URL(downloadLink);
      const download = await measured(async () => {
        const res = await fetch(`${base}${local.pathname}${local.search}`);
        let got = 0;
        for await (const chunk of Readable.fromWeb(res.body as never)) got += (chunk as Buffer).length;
        return got;
      });
      if (download.result !== BYTES) throw new Error(`downloaded ${download.result} bytes`);

      const uploadLink = new URL(
        ((await (await fetch(files('upload'), { headers: auth })).json()) as { attributes: { url: string } }).attributes.url,
      );
      const boundary = 'benchboundary';
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="up.bin"\r\n\r\n`);
      const upload = await measured(() =>
        fetch(`${base}${uploadLink.pathname}${uploadLink.search}&directory=/`, {
          method: 'POST',
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
          body: stream({ head, bytes: BYTES, tail: Buffer.from(`\r\n--${boundary}--\r\n`) }),
          duplex: 'half',
        } as RequestInit),
      );
      if (upload.result.status !== 204) throw new Error(`upload answered ${upload.result.status}`);

      const t0 = performance.now();
      execFileSync('cp', [path.join(volume, 'big.bin'), path.join(dataDir, 'copy.bin')]);
      const cp = performance.now() - t0;
      fs.rmSync(path.join(dataDir, 'copy.bin'));
      const fmt = (m: { ms: number; rssGrowthMiB: number }) => `${m.ms.toFixed(0)} ms (+${m.rssGrowthMiB.toFixed(0)} MiB RSS)`;
      rows.push(`run ${run + 1}: write ${fmt(write)}, download ${fmt(download)}, upload ${fmt(upload)}, cp ${cp.toFixed(0)} ms`);
    }
    console.log(`(b) ${BYTES / MIB} MiB each:\n  ${rows.join('\n  ')}`);
  } finally {
    await app.close();
    await jobs.idle();
    await daemon.close();
    await handle.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
