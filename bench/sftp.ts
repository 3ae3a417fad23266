/**
 * SFTP throughput benchmark (issue 19's figures): a SIZE_MIB file put to and
 * got from the demo server of a real `quetzal serve` with OpenSSH's `sftp`
 * client, against two same-run baselines: `cp` of the same file on the same
 * disk, and the same `sftp` commands against this machine's OpenSSH server
 * (`/usr/sbin/sshd`, started here on a free port with a throwaway host key
 * and client key; skipped when absent). Reports MiB/s, the ratio to each
 * baseline, and the service's resident memory before and at its peak (flat:
 * the transfer streams in 32–256 KiB requests).
 *
 *   npm run bench:sftp -- [--size-mib 1024]
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/database.js';
import { hashPassword } from '../src/modules/users/passwords.js';
import { memoryOf } from './lib/memory.js';

const { values } = parseArgs({ options: { 'size-mib': { type: 'string', default: '1024' } } });
const SIZE_MIB = Number(values['size-mib']);
const ROOT = path.resolve(import.meta.dirname, '..');
const PASSWORD = 'bench password 1';

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const SFTP_OPTIONS = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR'];

/** Seconds one `sftp -b` batch takes. */
function timedSftp(args: string[], commands: string, env: NodeJS.ProcessEnv, cwd: string): number {
  const started = performance.now();
  const result = spawnSync(args[0]!, args.slice(1), { input: commands, env, cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${args.join(' ')} failed: ${result.stderr}`);
  return (performance.now() - started) / 1000;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-sftp-'));
const dataDir = path.join(work, 'data');
const local = path.join(work, 'local');
fs.mkdirSync(local);
const source = path.join(local, 'big.bin');
execFileSync('head', ['-c', `${SIZE_MIB}M`, '/dev/urandom'], { stdio: ['ignore', fs.openSync(source, 'w'), 'inherit'] });

const rows: string[][] = [];
const rate = (seconds: number) => SIZE_MIB / seconds;
const port = await freePort();
const service = spawn(process.execPath, [path.join(ROOT, 'bin/quetzal.js'), 'serve'], {
  cwd: work,
  env: {
    ...process.env,
    DATA_DIR: dataDir,
    DATABASE_URL: `sqlite:${dataDir}/quetzal.sqlite`,
    PORT: '0',
    SFTP_PORT: String(port),
    SFTP_HOST: '127.0.0.1',
    SCHEDULER: 'off',
    LOG_LEVEL: 'info',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let sshd: ReturnType<typeof spawn> | undefined;
try {
  await new Promise<void>((resolve, reject) => {
    let out = '';
    service.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('"msg":"quetzal is listening"')) resolve();
    });
    service.once('exit', (code) => reject(new Error(`quetzal serve exited (${code})`)));
  });
  const database = openDatabase(`sqlite:${dataDir}/quetzal.sqlite`);
  await database.db
    .updateTable('users')
    .set({ password: await hashPassword(PASSWORD) })
    .where('username', '=', 'admin')
    .execute();
  const demo = await database.db.selectFrom('servers').select(['uuid', 'uuid_short']).executeTakeFirstOrThrow();
  await database.close();

  const cpSeconds = (() => {
    const started = performance.now();
    execFileSync('cp', [source, path.join(local, 'copy.bin')]);
    return (performance.now() - started) / 1000;
  })();
  fs.rmSync(path.join(local, 'copy.bin'));

  const before = memoryOf(service.pid!);
  const env = { ...process.env, SSHPASS: PASSWORD };
  const quetzalSftp = [
    'sshpass',
    '-e',
    'sftp',
    '-o',
    'BatchMode=no',
    '-b',
    '-',
    '-P',
    String(port),
    ...SFTP_OPTIONS,
    '-o',
    'PubkeyAuthentication=no',
    `admin.${demo.uuid_short}@127.0.0.1`,
  ];
  const put = timedSftp(quetzalSftp, 'put big.bin\n', env, local);
  const get = timedSftp(quetzalSftp, 'get big.bin back.bin\n', env, local);
  const after = memoryOf(service.pid!);
  if (!fs.readFileSync(path.join(local, 'back.bin')).equals(fs.readFileSync(source)))
    throw new Error('the file came back different');
  fs.rmSync(path.join(local, 'back.bin'));

  let baseline: { put: number; get: number } | undefined;
  if (fs.existsSync('/usr/sbin/sshd')) {
    const sshdPort = await freePort();
    const keys = path.join(work, 'ssh');
    fs.mkdirSync(keys, { mode: 0o700 });
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(keys, 'host')]);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(keys, 'client')]);
    fs.copyFileSync(path.join(keys, 'client.pub'), path.join(keys, 'authorized_keys'));
    const target = path.join(work, 'sshd-target');
    fs.mkdirSync(target);
    fs.mkdirSync('/run/sshd', { recursive: true });
    sshd = spawn(
      '/usr/sbin/sshd',
      [
        '-D',
        '-e',
        '-f',
        '/dev/null',
        '-p',
        String(sshdPort),
        '-h',
        path.join(keys, 'host'),
        '-o',
        `AuthorizedKeysFile=${path.join(keys, 'authorized_keys')}`,
        '-o',
        'ListenAddress=127.0.0.1',
        '-o',
        'PermitRootLogin=prohibit-password',
        '-o',
        'Subsystem=sftp internal-sftp',
        '-o',
        'StrictModes=no',
      ],
      { stdio: 'ignore' },
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const openssh = [
      'sftp',
      '-b',
      '-',
      '-P',
      String(sshdPort),
      ...SFTP_OPTIONS,
      '-i',
      path.join(keys, 'client'),
      `${os.userInfo().username}@127.0.0.1`,
    ];
    baseline = {
      put: timedSftp(openssh, `put big.bin ${target}/big.bin\n`, process.env, local),
      get: timedSftp(openssh, `get ${target}/big.bin back.bin\n`, process.env, local),
    };
  }

  rows.push(['cp (same disk)', rate(cpSeconds).toFixed(0), '', '']);
  rows.push([
    'quetzal sftp put',
    rate(put).toFixed(0),
    `${((100 * cpSeconds) / put).toFixed(0)}%`,
    baseline ? `${((100 * baseline.put) / put).toFixed(0)}%` : '-',
  ]);
  rows.push([
    'quetzal sftp get',
    rate(get).toFixed(0),
    `${((100 * cpSeconds) / get).toFixed(0)}%`,
    baseline ? `${((100 * baseline.get) / get).toFixed(0)}%` : '-',
  ]);
  if (baseline) {
    rows.push(['OpenSSH sshd put', rate(baseline.put).toFixed(0), `${((100 * cpSeconds) / baseline.put).toFixed(0)}%`, '100%']);
    rows.push(['OpenSSH sshd get', rate(baseline.get).toFixed(0), `${((100 * cpSeconds) / baseline.get).toFixed(0)}%`, '100%']);
  }
  console.log(`SFTP, ${SIZE_MIB} MiB file, ${os.cpus().length} cores`);
  console.log('| transfer | MiB/s | of cp | of OpenSSH sshd |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log(
    `service memory: ${before.rssMiB.toFixed(0)} MiB before, ${after.rssMiB.toFixed(0)} MiB after, peak ${after.peakRssMiB.toFixed(0)} MiB (peak before: ${before.peakRssMiB.toFixed(0)} MiB)`,
  );
} finally {
  sshd?.kill('SIGTERM');
  service.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));
  fs.rmSync(work, { recursive: true, force: true });
}
