import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { openDatabase, type DatabaseHandle, type DialectName } from '../../src/db/database.js';
import { TEST_DATABASE_URL, withSearchPath } from '../helpers/databases.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'bin/quetzal.js');

/** Variables the service reads: a child process gets only the ones a test sets. */
const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'SFTP_PORT',
  'SFTP_HOST',
  'DATABASE_URL',
  'DATA_DIR',
  'APP_TIMEZONE',
  'APP_URL',
  'RATE_LIMIT_PER_MINUTE',
  'SCHEDULER',
  'TRUST_PROXY',
  'LOG_LEVEL',
  'SCHEDULE_TASK_LIMIT',
  'ACTIVITY_PRUNE_DAYS',
  'QUETZAL_BOOTSTRAP',
];

/**
 * A fresh, empty (not even migrated) database and DATA_DIR for the real binary:
 * a SQLite file inside DATA_DIR, or a new PostgreSQL schema named in the URL.
 */
export interface CliSandbox {
  dialect: DialectName;
  dataDir: string;
  env: Record<string, string>;
  /** The same database, for the test to look at (open it after a command migrated it). */
  db(): DatabaseHandle;
  dispose(): Promise<void>;
}

export async function createSandbox(dialect: DialectName): Promise<CliSandbox> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-cli-'));
  let url: string;
  let schema: string | undefined;
  if (dialect === 'postgres') {
    schema = `cli_${randomBytes(6).toString('hex')}`;
    await adminQuery(`CREATE SCHEMA ${schema}`);
    url = withSearchPath(TEST_DATABASE_URL!, schema);
  } else {
    url = `sqlite:${path.join(dataDir, 'quetzal.sqlite')}`;
  }
  let handle: DatabaseHandle | undefined;
  return {
    dialect,
    dataDir,
    env: { DATA_DIR: dataDir, DATABASE_URL: url, LOG_LEVEL: 'warn' },
    db() {
      handle ??= schema ? openDatabase(TEST_DATABASE_URL!, { searchPath: schema, poolSize: 2 }) : openDatabase(url);
      return handle;
    },
    async dispose() {
      await handle?.close();
      if (schema) await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function adminQuery(text: string) {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** A sandbox made before the describe block's tests and removed after them (like useHarness). */
export function useSandbox(dialect: DialectName): CliSandbox {
  const box = {} as CliSandbox;
  beforeAll(async () => {
    Object.assign(box, await createSandbox(dialect));
  });
  afterAll(async () => {
    await box.dispose?.();
  });
  return box;
}

export const CLI_DIALECTS: DialectName[] = ['sqlite', ...(TEST_DATABASE_URL ? (['postgres'] as const) : [])];

/** `describe` once per database the suite runs on. */
export function describeEachDialect(title: string, body: (dialect: DialectName) => void) {
  for (const dialect of CLI_DIALECTS) describe(`${title} [${dialect}]`, () => body(dialect));
}

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of CONFIG_VARIABLES) delete base[name];
  // SFTP off (SFTP_PORT=0) unless a test asks: parallel services must not all bind 2022.
  return { ...base, SFTP_PORT: '0', ...env };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * DATA_DIR, so that no stray `.env` is read; its parent (a folder the test made)
 * when the command is to create DATA_DIR itself.
 */
function workingFolder(env: Record<string, string>): string {
  if (env.DATA_DIR === undefined) return os.tmpdir();
  return fs.existsSync(env.DATA_DIR) ? env.DATA_DIR : path.dirname(env.DATA_DIR);
}

/** Runs `quetzal <args>` to its end, in DATA_DIR (see workingFolder). */
export function quetzal(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: workingFolder(env), env: childEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs a command with --json and returns the object it printed; throws with its stderr when it failed. */
export async function quetzalJson(args: string[], env: Record<string, string>): Promise<Record<string, any>> {
  const result = await quetzal([...args, '--json'], env);
  if (result.code !== 0) throw new Error(`quetzal ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, any>;
}

export interface ServiceProcess {
  child: ChildProcess;
  /** Where the API listens (serve only). */
  url: string | undefined;
  stdout(): string;
  stderr(): string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `quetzal serve` (or `worker`) and waits until it is up: for serve, the
 * log line with the URL it listens at (PORT=0 picks a free port).
 */
export function startService(command: 'serve' | 'worker', env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [BIN, command], {
    cwd: workingFolder(env),
    // Readiness is read from the info-level log lines.
    env: childEnv({ PORT: '0', ...env, LOG_LEVEL: 'info' }),
  });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`quetzal ${command} did not start:\n${stdout}\n${stderr}`));
    }, 30_000);
    const service: ServiceProcess = {
      child,
      url: undefined,
      stdout: () => stdout,
      stderr: () => stderr,
      async stop(signal = 'SIGTERM') {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        return exited;
      },
    };
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      // Complete lines only: a chunk may end mid-line.
      for (const line of stdout.split('\n').slice(0, -1)) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (command === 'serve' && entry.msg === 'quetzal is listening') service.url = entry.url;
        if (entry.msg === 'scheduler started' || (command === 'serve' && env.SCHEDULER === 'off' && service.url)) {
          clearTimeout(timer);
          resolve(service);
        }
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`quetzal ${command} exited (${code}) before it was ready:\n${stdout}\n${stderr}`));
    });
  });
}

export async function getJson(url: string, token: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
