import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import ssh2 from 'ssh2';
import { afterAll, beforeAll } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { startSftpServer, type RunningSftpServer, type SftpLogger } from '../../src/modules/sftp/sftp.server.js';
import { useHarness, type Harness } from '../helpers/harness.js';
import type { TestDatabase } from '../helpers/databases.js';
import { scratchDir } from '../helpers/scratch.js';

/** A test harness (real database, real daemon, real files) with the real SFTP server on a port of its own. */
export interface SftpHarness extends Harness {
  sftp: RunningSftpServer;
  /** What the server logged at warn and error. */
  problems: string[];
}

export const quietLogger = (problems: string[]): SftpLogger => ({
  info: () => {},
  warn: (obj, msg) => problems.push(`${msg} ${JSON.stringify(obj)}`),
  error: (obj, msg) => problems.push(`${msg} ${String((obj as { err?: unknown }).err)}`),
});

export function useSftpHarness(
  database: TestDatabase,
  env: Record<string, string> = {},
  options: { recheckMs?: number } = {},
): SftpHarness {
  const h = useHarness(database, env) as SftpHarness;
  beforeAll(async () => {
    h.problems = [];
    h.sftp = await startSftpServer(h.deps, quietLogger(h.problems), { host: '127.0.0.1', port: 0, ...options });
  });
  afterAll(async () => {
    await h.sftp?.stop();
  });
  return h;
}

export const volumeOf = (h: Harness, server: ServerRow) => path.join(h.dataDir, 'volumes', server.uuid);

export interface BatchResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * OpenSSH's `sftp` in batch mode, the password fed by sshpass. `BatchMode=no`
 * comes before `-b` (ssh takes the first value it is given): batch mode
 * would otherwise forbid the password prompt sshpass answers.
 */
export function sftpBatch(
  port: number,
  login: string,
  password: string,
  commands: string[],
  options: { cwd?: string; from?: string } = {},
): Promise<BatchResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'sshpass',
      [
        '-e',
        'sftp',
        '-o',
        'BatchMode=no',
        '-b',
        '-',
        '-P',
        String(port),
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'PubkeyAuthentication=no',
        '-o',
        'PreferredAuthentications=password',
        '-o',
        'NumberOfPasswordPrompts=1',
        '-o',
        'LogLevel=ERROR',
        '-o',
        `BindAddress=${options.from ?? '127.0.0.1'}`,
        `${login}@127.0.0.1`,
      ],
      { env: { ...process.env, SSHPASS: password }, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(`${commands.join('\n')}\n`);
  });
}

/** An ssh2 client connection (for what the sftp command cannot show: the moment the server closes a session). */
export function connectClient(port: number, username: string, password: string, from = loopbackAddress()): Promise<ssh2.Client> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    client.once('ready', () => resolve(client));
    client.once('error', reject);
    client.connect({ host: '127.0.0.1', port, username, password, localAddress: from, tryKeyboard: false, readyTimeout: 20_000 });
  });
}

export function openSftp(client: ssh2.Client): Promise<ssh2.SFTPWrapper> {
  return new Promise((resolve, reject) => client.sftp((err, sftp) => (err ? reject(err) : resolve(sftp))));
}

/**
 * A loopback address of its own (127.0.0.0/8 all reaches this machine) to
 * connect from, so that the sign-in throttle's per-address count of one test
 * never meets another's.
 */
export const loopbackAddress = () => `127.${randomBytes(3).join('.')}`;

/** A local scratch folder for files to put and get. */
export function scratch(): string {
  return scratchDir('quetzal-sftp-');
}

export interface LoggedSftpEvent {
  event: string;
  actor: number | null;
  ip: string | null;
  properties: Record<string, unknown>;
}

/** The server's `server:sftp.*` entries, oldest first. */
export async function sftpEvents(h: Harness, serverId: number): Promise<LoggedSftpEvent[]> {
  const rows = await h.db.db
    .selectFrom('activity_logs')
    .select(['event', 'actor_id', 'ip', 'properties'])
    .where('server_id', '=', serverId)
    .where('event', 'like', 'server:sftp.%')
    .orderBy('seq')
    .execute();
  return rows.map((r) => ({
    event: r.event,
    actor: r.actor_id,
    ip: r.ip,
    properties: JSON.parse(r.properties) as Record<string, unknown>,
  }));
}

/** Polls `probe` until it returns a value other than undefined (or the time is up). */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
