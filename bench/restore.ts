/**
 * Restore benchmark (issue #3, item 4): a generated volume (a few large
 * semi-random files plus 5,000 small ones in nested folders) is backed up
 * (POST /backups on a real app, SQLite and the local daemon, in a child
 * process) and restored through the service as it is deployed — `node
 * bin/quetzal.js serve`, what `npm start` runs, from the bundle
 * scripts/build.js makes — with POST .../restore over HTTP, and compared, in
 * the same run, with GNU `tar -xzf` of the same archive into an empty folder.
 *
 * Each run, alternating whether tar or the service goes first:
 *
 * - tar: wall time of `tar -xzf <archive> -C <empty dir>`
 * - service: wall time from the restore request until the server's status is
 *   back to null (polled every 5 ms; `restore-complete` must then be the last
 *   entry logged), restoring with truncate onto an emptied volume: the same
 *   work as tar's, everything written and nothing to move aside
 * - service peak RSS: VmHWM of the service process, reset just before the
 *   request (two seconds after it answered /health), so it is the restore's
 *   peak, not start-up's; and its RSS before the request
 * - restore-only peak RSS: the same restore by the local daemon alone, in a
 *   process that loads nothing else (node + tsx + the daemon)
 * - over existing: the restore with truncate onto the full volume (the old
 *   files moved aside, then deleted); for information, measured after all
 *   the runs because it deletes
 *
 * Until the end nothing is deleted (spent trees are moved aside), so the disk
 * needs about (3 × runs + 2) times the volume's size.
 *
 *   npm run bench:restore -- [--size-mb 300] [--runs 3] [--small-files 5000] [--dir /tmp] [--no-existing]
 *   BENCH_RESTORE_SIZE_MB=1024 npm run bench:restore
 *
 * `--dir` is where the volume, the archive and tar's output go (default: the
 * system temp folder); `--dir /dev/shm` takes the disk out of the figures.
 * The first run checks both extractions against the original volume (paths,
 * types, modes, sizes and contents), outside the timings.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { memoryOf } from './lib/memory.js';
import { freePort } from './lib/ports.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SELF = fileURLToPath(import.meta.url);
const MiB = 1024 * 1024;

interface ChildInput {
  /** backup and restore go through the HTTP API of a whole app; daemon-restore calls the local daemon alone. */
  action: 'backup' | 'restore' | 'daemon-restore';
  dataDir: string;
  databaseUrl: string;
  token: string;
  serverShort: string;
  serverUuid: string;
  backupUuid?: string;
  sha1?: string;
}

interface ChildResult {
  wallMs: number;
  rssBeforeMiB: number;
  peakRssMiB: number;
  backupUuid?: string;
  bytes?: number;
  sha1?: string;
}

// ------------------------------------------------------------------ child: the service

function peakRssKb(): number {
  const peak = memoryOf('self').peakRssMiB * 1024;
  return Number.isNaN(peak) ? process.resourceUsage().maxRSS : peak;
}

/** Makes VmHWM start again from the current RSS (Linux 4.0+), so the peak is the restore's, not start-up's. */
function resetPeakRss(): void {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // Older kernels: the peak then includes start-up, which only overstates it.
  }
}

/** The local daemon's restore alone: what a restore costs a process that does nothing else. */
async function daemonChild(input: ChildInput): Promise<void> {
  const { LocalDaemon } = await import('../src/daemon/local/local-daemon.js');
  const daemon = new LocalDaemon(input.dataDir);
  (globalThis as { gc?: () => void }).gc?.();
  const rssBefore = process.memoryUsage().rss;
  resetPeakRss();
  const start = performance.now();
  await daemon.restoreBackup(
    { uuid: input.serverUuid, startup: null, stopCommand: null },
    { uuid: input.backupUuid!, sha1: input.sha1 ?? null },
    { truncate: true },
  );
  const result: ChildResult = {
    wallMs: performance.now() - start,
    rssBeforeMiB: rssBefore / MiB,
    peakRssMiB: peakRssKb() / 1024,
  };
  await daemon.close();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

async function child(input: ChildInput): Promise<void> {
  if (input.action === 'daemon-restore') return daemonChild(input);
  const [{ buildApp }, { BackgroundJobs }, { systemClock }, { loadConfig }, { LocalDaemon }, { openDatabase }] =
    await Promise.all([
      import('../src/app.js'),
      import('../src/background.js'),
      import('../src/clock.js'),
      import('../src/config.js'),
      import('../src/daemon/local/local-daemon.js'),
      import('../src/db/database.js'),
    ]);
  const config = loadConfig({
    DATA_DIR: input.dataDir,
    DATABASE_URL: input.databaseUrl,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  const database = openDatabase(config.databaseUrl);
  const daemon = new LocalDaemon(config.dataDir);
  await daemon.start();
  const failures: unknown[] = [];
  const jobs = new BackgroundJobs({ error: (obj) => failures.push((obj as { err?: unknown }).err ?? obj) });
  const app = await buildApp(
    { db: database.db, dialect: database.dialect, config, clock: systemClock, daemon, jobs },
    { logger: false },
  );
  await app.ready();
  const headers = { authorization: `Bearer ${input.token}` };
  const backups = `/api/client/servers/${input.serverShort}/backups`;

  (globalThis as { gc?: () => void }).gc?.();
  const rssBefore = process.memoryUsage().rss;
  resetPeakRss();
  const start = performance.now();
  let backupUuid = input.backupUuid;
  if (input.action === 'backup') {
    const res = await app.inject({ method: 'POST', url: backups, headers, payload: { name: 'bench' } });
    if (res.statusCode !== 200) throw new Error(`POST /backups: ${res.statusCode} ${res.body}`);
    backupUuid = (res.json() as { attributes: { uuid: string } }).attributes.uuid;
  } else {
    const res = await app.inject({
      method: 'POST',
      url: `${backups}/${backupUuid}/restore`,
      headers,
      payload: { truncate: true },
    });
    if (res.statusCode !== 204) throw new Error(`POST /restore: ${res.statusCode} ${res.body}`);
  }
  await jobs.idle();
  const wallMs = performance.now() - start;
  const peak = peakRssKb();
  if (failures.length > 0)
    throw new Error(
      `the ${input.action} failed: ${failures.map((f) => (f instanceof Error ? f.message : String(f))).join('; ')}`,
    );

  const result: ChildResult = { wallMs, rssBeforeMiB: rssBefore / MiB, peakRssMiB: peak / 1024 };
  if (input.action === 'backup') {
    const shown = await app.inject({ method: 'GET', url: `${backups}/${backupUuid}`, headers });
    const attributes = (shown.json() as { attributes: { is_successful: boolean; bytes: number; checksum: string } }).attributes;
    if (!attributes.is_successful) throw new Error('the backup did not succeed');
    Object.assign(result, { backupUuid, bytes: attributes.bytes, sha1: attributes.checksum.replace(/^sha1:/, '') });
  } else {
    const server = await database.db
      .selectFrom('servers')
      .select(['id', 'status'])
      .where('uuid_short', '=', input.serverShort)
      .executeTakeFirstOrThrow();
    const last = await database.db
      .selectFrom('activity_logs')
      .select('event')
      .where('server_id', '=', server.id)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
    if (server.status !== null || last.event !== 'server:backup.restore-complete') {
      throw new Error(`restore did not complete: status ${server.status}, last event ${last.event}`);
    }
  }
  await app.close();
  await daemon.close();
  await database.close();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

// ------------------------------------------------------------------ the volume

/** xorshift32: the same text for the same seed. */
function prng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

const WORDS = (
  'the a player joined left game world chunk saved level INFO WARN ERROR server tick entity spawn true false ' +
  'minecraft:stone minecraft:dirt x y z config enabled disabled port motd max-players difficulty gamemode survival ' +
  'plugin loaded version build java thread main async task scheduler database connection pool timeout'
).split(' ');

/** Log- and config-like text: gzip level 1 gets it to about a third, as with real text files. */
function pseudoText(bytes: number, next: () => number): Buffer {
  const parts: string[] = [];
  let length = 0;
  while (length < bytes) {
    const words = 4 + (next() % 12);
    let line = `[${String(next() % 24).padStart(2, '0')}:${String(next() % 60).padStart(2, '0')}:${String(next() % 60).padStart(2, '0')}]`;
    for (let i = 0; i < words; i++) line += ` ${WORDS[next() % WORDS.length]}${next() % 4 === 0 ? `=${next() % 100000}` : ''}`;
    line += '\n';
    parts.push(line);
    length += line.length;
  }
  return Buffer.from(parts.join('')).subarray(0, bytes);
}

interface Manifest {
  files: number;
  directories: number;
  bytes: number;
  /** one line per entry: path, type, mode, size, sha1 */
  lines: string[];
}

/**
 * Writes the volume: `smallFiles` text files of 200 B to 12 KiB in nested
 * folders, and the rest of `totalBytes` in four large files made of 1 MiB
 * blocks that are, at random, either random bytes (like region files, jars
 * and other already-compressed data) or text.
 */
function generateVolume(volume: string, totalBytes: number, smallFiles: number): void {
  const next = prng(0x5eed);
  const pool = pseudoText(4 * MiB, next);
  let smallBytes = 0;
  for (let i = 0; i < smallFiles; i++) {
    const dir = path.join(
      volume,
      'plugins',
      `plugin-${String(Math.floor(i / 100)).padStart(2, '0')}`,
      'data',
      String(Math.floor(i / 10) % 10),
    );
    if (i % 10 === 0) fs.mkdirSync(dir, { recursive: true });
    const size = 200 + (next() % (12 * 1024 - 200));
    const offset = next() % (pool.length - size);
    fs.writeFileSync(path.join(dir, `entry-${i}.yml`), pool.subarray(offset, offset + size), {
      mode: i % 7 === 0 ? 0o600 : 0o644,
    });
    smallBytes += size;
  }
  const largeBytes = Math.max(0, totalBytes - smallBytes);
  const shares = [0.4, 0.3, 0.2, 0.1];
  const names = ['world/region/r.0.0.mca', 'world/region/r.0.1.mca', 'server.jar', 'logs/latest.log'];
  names.forEach((name, index) => {
    const file = path.join(volume, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const fd = fs.openSync(file, 'w', 0o644);
    try {
      let left = Math.floor(largeBytes * shares[index]!);
      while (left > 0) {
        const size = Math.min(MiB, left);
        let block: Buffer;
        if (next() % 2 === 0) {
          block = randomBytes(size);
        } else {
          const offset = next() % (pool.length - size);
          block = pool.subarray(offset, offset + size);
        }
        fs.writeSync(fd, block);
        left -= size;
      }
    } finally {
      fs.closeSync(fd);
    }
  });
  fs.writeFileSync(path.join(volume, 'server.properties'), 'motd=bench\nmax-players=20\n');
}

function manifestOf(root: string, withContents: boolean): Manifest {
  const manifest: Manifest = { files: 0, directories: 0, bytes: 0, lines: [] };
  const walk = (relative: string) => {
    for (const entry of fs.readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      const stat = fs.lstatSync(path.join(root, child));
      if (stat.isDirectory()) {
        manifest.directories += 1;
        manifest.lines.push(`${child}/ d ${(stat.mode & 0o777).toString(8)}`);
        walk(child);
      } else if (stat.isFile()) {
        manifest.files += 1;
        manifest.bytes += stat.size;
        const sha1 = withContents
          ? createHash('sha1')
              .update(fs.readFileSync(path.join(root, child)))
              .digest('hex')
          : '';
        manifest.lines.push(`${child} f ${(stat.mode & 0o777).toString(8)} ${stat.size} ${sha1}`);
      } else {
        manifest.lines.push(`${child} other`);
      }
    }
  };
  walk('');
  manifest.lines.sort();
  return manifest;
}

function sameManifest(a: Manifest, b: Manifest, label: string): void {
  if (a.lines.length !== b.lines.length) throw new Error(`${label}: ${b.lines.length} entries, expected ${a.lines.length}`);
  a.lines.forEach((line, i) => {
    if (line !== b.lines[i]) throw new Error(`${label}: entry differs: ${b.lines[i]} (expected ${line})`);
  });
}

// ------------------------------------------------------------------ the parent

function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ stdout: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const proc = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    proc.once('error', reject);
    proc.once('exit', (code, signal) => {
      const ms = performance.now() - start;
      if (code === 0) resolve({ stdout, ms });
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code ?? signal}`));
    });
  });
}

async function service(input: ChildInput): Promise<ChildResult> {
  const { stdout } = await run(process.execPath, ['--expose-gc', '--import', 'tsx', SELF, '--child'], {
    BENCH_RESTORE_CHILD: JSON.stringify(input),
  });
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as ChildResult;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The restore through the service as it is deployed: `node bin/quetzal.js serve`
 * (what `npm start` runs, the bundle scripts/build.js makes), over HTTP. Timed
 * from the request until the server's status is back to null (polled every
 * 5 ms from this process); the peak is that process's VmHWM, reset just
 * before the request.
 */
async function servedRestore(input: ChildInput): Promise<ChildResult> {
  const { openSqliteConnection } = await import('../src/db/sqlite-driver.js');
  const port = await freePort();
  const proc = spawn(process.execPath, [path.join(ROOT, 'bin', 'quetzal.js'), 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: input.dataDir,
      DATABASE_URL: input.databaseUrl,
      HOST: '127.0.0.1',
      SFTP_PORT: '0',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '100000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const db = openSqliteConnection(input.databaseUrl.replace(/^sqlite:/, ''), { readonly: true });
  const firstValue = (query: string, param: string) =>
    (db.prepare(query, { arrays: true }).get([param]) as unknown[] | undefined)?.[0];
  try {
    const base = `http://127.0.0.1:${port}`;
    for (let ready = false; !ready;) {
      if (proc.exitCode !== null) throw new Error(`the service exited with ${proc.exitCode}`);
      ready = await fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (!ready) await sleep(50);
    }
    // Start-up's garbage collected, as in a service that has been up a while.
    await sleep(2000);
    const pid = proc.pid!;
    const rssBefore = memoryOf(pid).rssMiB;
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const status = { get: (short: string) => firstValue('select status from servers where uuid_short = ?', short) };
    const start = performance.now();
    const res = await fetch(`${base}/api/client/servers/${input.serverShort}/backups/${input.backupUuid}/restore`, {
      method: 'POST',
      headers: { authorization: `Bearer ${input.token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ truncate: true }),
    });
    if (res.status !== 204) throw new Error(`POST /restore: ${res.status} ${await res.text()}`);
    while (status.get(input.serverShort) !== null) await sleep(5);
    const wallMs = performance.now() - start;
    const peak = memoryOf(pid).peakRssMiB;
    const last = firstValue(
      'select l.event from activity_logs l join servers s on s.id = l.server_id where s.uuid_short = ? order by l.id desc limit 1',
      input.serverShort,
    );
    if (last !== 'server:backup.restore-complete') throw new Error(`restore did not complete: last event ${String(last)}`);
    return { wallMs, rssBeforeMiB: rssBefore, peakRssMiB: peak };
  } finally {
    db.close();
    proc.kill('SIGTERM');
    await exited;
  }
}

/** Flushes dirty pages left by the previous step, so one measurement does not pay for another's writeback. */
async function settle(): Promise<void> {
  await run('sync', []);
}

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const raw = index >= 0 ? process.argv[index + 1] : undefined;
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

interface RunFigures {
  tarMs: number;
  serviceMs: number;
  ratio: number;
  servicePeakRssMiB: number;
  serviceRssBeforeMiB: number;
  restoreOnlyMs: number;
  restoreOnlyPeakRssMiB: number;
  existingMs?: number;
}

function stringOption(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

async function main(): Promise<void> {
  const sizeMiB = option('size-mb', Number(process.env.BENCH_RESTORE_SIZE_MB ?? 300));
  const runs = option('runs', 3);
  const smallFiles = option('small-files', 5000);
  const overExisting = !process.argv.includes('--no-existing');
  const keep = process.argv.includes('--keep');
  const baseDir = path.resolve(stringOption('dir') ?? os.tmpdir());

  const { openDatabase } = await import('../src/db/database.js');
  const { migrateToLatest } = await import('../src/db/migrate.js');
  const { LocalDaemon } = await import('../src/daemon/local/local-daemon.js');
  const { createUser } = await import('../src/modules/users/users.repository.js');
  const { createApiKey } = await import('../src/modules/keys/keys.service.js');
  const { createServer } = await import('../src/modules/servers/servers.service.js');

  // The service is measured as `npm start` runs it: from the bundle.
  await run(process.execPath, [path.join(ROOT, 'scripts', 'build.js')]);
  const root = fs.mkdtempSync(path.join(baseDir, 'quetzal-bench-restore-'));
  try {
    const dataDir = path.join(root, 'data');
    const databaseUrl = `sqlite:${path.join(root, 'bench.sqlite')}`;
    const handle = openDatabase(databaseUrl);
    await migrateToLatest(handle);
    const daemon = new LocalDaemon(dataDir);
    await daemon.start();
    const now = Date.now();
    const user = await createUser(handle.db, { username: 'bench', email: 'bench@example.test', rootAdmin: false, now });
    const { token } = await createApiKey(handle.db, { userId: user.id, description: 'bench', allowedIps: [], now });
    const server = await createServer(handle.db, daemon, { ownerId: user.id, name: 'bench', now });
    await daemon.close();
    await handle.close();
    const volume = daemon.volumeDir(server.uuid);

    const started = performance.now();
    generateVolume(volume, sizeMiB * MiB, smallFiles);
    const original = manifestOf(volume, true);
    console.error(
      `volume: ${original.files} files, ${original.directories} folders, ${(original.bytes / MiB).toFixed(0)} MiB in ${root} (generated in ${((performance.now() - started) / 1000).toFixed(1)} s)`,
    );

    const base = { dataDir, databaseUrl, token, serverShort: server.uuid_short, serverUuid: server.uuid };
    await settle();
    const backup = await service({ ...base, action: 'backup' });
    const restoreInput: ChildInput = { ...base, action: 'restore', backupUuid: backup.backupUuid!, sha1: backup.sha1! };
    const archive = daemon.backupPath(backup.backupUuid!);
    console.error(
      `backup through the service: ${(backup.wallMs / 1000).toFixed(2)} s, archive ${((backup.bytes ?? 0) / MiB).toFixed(0)} MiB, peak RSS ${backup.peakRssMiB.toFixed(0)} MiB`,
    );

    // Nothing is deleted until the end: on this VM's disk, writing just after deleting a few hundred MiB was
    // several times slower than writing into fresh space, whoever wrote. Spent trees are moved aside instead.
    const spent = path.join(root, 'spent');
    fs.mkdirSync(spent);
    let spentCount = 0;
    const figures: RunFigures[] = [];
    for (let i = 0; i < runs; i++) {
      const timeTar = async () => {
        const tarDir = path.join(spent, `tar-${i}`);
        fs.mkdirSync(tarDir);
        await settle();
        const { ms } = await run('tar', ['-xzf', archive, '-C', tarDir]);
        if (i === 0) sameManifest(original, manifestOf(tarDir, true), 'tar -xzf');
        return ms;
      };
      const restoreEmptied = async (action: ChildInput['action']) => {
        fs.renameSync(volume, path.join(spent, `volume-${(spentCount += 1)}`));
        fs.mkdirSync(volume);
        await settle();
        const result = action === 'restore' ? await servedRestore(restoreInput) : await service({ ...restoreInput, action });
        if (i === 0) sameManifest(original, manifestOf(volume, true), `restore (${action})`);
        return result;
      };
      let tarMs: number;
      let restored: ChildResult;
      // Alternate the order, so neither always runs on the other's leftovers.
      if (i % 2 === 0) {
        tarMs = await timeTar();
        restored = await restoreEmptied('restore');
      } else {
        restored = await restoreEmptied('restore');
        tarMs = await timeTar();
      }
      const alone = await restoreEmptied('daemon-restore');
      figures.push({
        tarMs,
        serviceMs: restored.wallMs,
        ratio: restored.wallMs / tarMs,
        servicePeakRssMiB: restored.peakRssMiB,
        serviceRssBeforeMiB: restored.rssBeforeMiB,
        restoreOnlyMs: alone.wallMs,
        restoreOnlyPeakRssMiB: alone.peakRssMiB,
      });
      console.error(
        `run ${i + 1}/${runs}: tar ${(tarMs / 1000).toFixed(2)} s, service ${(restored.wallMs / 1000).toFixed(2)} s (${(restored.wallMs / tarMs).toFixed(2)}x), ` +
          `peak RSS ${restored.peakRssMiB.toFixed(0)} MiB (from ${restored.rssBeforeMiB.toFixed(0)}), restore alone ${(alone.wallMs / 1000).toFixed(2)} s, ${alone.peakRssMiB.toFixed(0)} MiB`,
      );
    }
    if (overExisting) {
      // Last, because these delete: the volume holds the restored files, and each restore replaces them.
      for (const figure of figures) {
        await settle();
        figure.existingMs = (await servedRestore(restoreInput)).wallMs;
        console.error(`over existing: ${(figure.existingMs / 1000).toFixed(2)} s`);
      }
    }

    const pick = (key: keyof RunFigures) => figures.map((f) => f[key]).filter((v): v is number => v !== undefined);
    const seconds = (ms: number) => (ms / 1000).toFixed(2);
    const columns: Array<[string, (f: RunFigures) => number, (v: number) => string]> = [
      ['tar -xzf (s)', (f) => f.tarMs, seconds],
      ['service (s)', (f) => f.serviceMs, seconds],
      ['service/tar', (f) => f.ratio, (v) => v.toFixed(2)],
      ['service peak RSS (MiB)', (f) => f.servicePeakRssMiB, (v) => v.toFixed(0)],
      ['RSS before (MiB)', (f) => f.serviceRssBeforeMiB, (v) => v.toFixed(0)],
      ['restore alone (s)', (f) => f.restoreOnlyMs, seconds],
      ['restore alone peak RSS (MiB)', (f) => f.restoreOnlyPeakRssMiB, (v) => v.toFixed(0)],
      ...(overExisting
        ? [
            ['over existing (s)', (f: RunFigures) => f.existingMs ?? NaN, seconds] as [
              string,
              (f: RunFigures) => number,
              (v: number) => string,
            ],
          ]
        : []),
    ];
    const rows: string[][] = [
      ['run', ...columns.map(([title]) => title)],
      ...figures.map((f, i) => [String(i + 1), ...columns.map(([, get, show]) => show(get(f)))]),
      ['median', ...columns.map(([, get, show]) => show(median(figures.map(get))))],
    ];
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
    console.log(
      `\nrestore of a ${(original.bytes / MiB).toFixed(0)} MiB volume (${original.files} files, ${original.directories} folders), ` +
        `archive ${((backup.bytes ?? 0) / MiB).toFixed(0)} MiB, in ${baseDir}, ${runs} runs, ${os.cpus().length} CPUs, node ${process.version}\n`,
    );
    for (const row of rows) console.log(row.map((cell, c) => cell.padStart(widths[c]!)).join('  '));
    console.log(
      JSON.stringify({
        bench: 'restore',
        dir: baseDir,
        volumeMiB: Math.round(original.bytes / MiB),
        files: original.files,
        archiveMiB: Math.round((backup.bytes ?? 0) / MiB),
        runs,
        tarMs: Math.round(median(pick('tarMs'))),
        serviceMs: Math.round(median(pick('serviceMs'))),
        ratio: Number(median(pick('ratio')).toFixed(3)),
        servicePeakRssMiB: Math.round(Math.max(...pick('servicePeakRssMiB'))),
        serviceRssBeforeMiB: Math.round(median(pick('serviceRssBeforeMiB'))),
        restoreOnlyMs: Math.round(median(pick('restoreOnlyMs'))),
        restoreOnlyPeakRssMiB: Math.round(Math.max(...pick('restoreOnlyPeakRssMiB'))),
        ...(overExisting ? { overExistingMs: Math.round(median(pick('existingMs'))) } : {}),
        backupMs: Math.round(backup.wallMs),
        targets: { ratio: 1.0, peakRssMiB: 150 },
      }),
    );
  } finally {
    if (keep) console.error(`kept ${root}`);
    else fs.rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv.includes('--child')) {
  await child(JSON.parse(process.env.BENCH_RESTORE_CHILD ?? '{}') as ChildInput);
} else {
  await main();
}
