/**
 * A thin wrapper over the `runc` command line. The state directory (`--root`)
 * is the service's own, under DATA_DIR/run, so that its containers never mix
 * with another runc user's (Docker's, containerd's) and a restarted service
 * finds exactly its own.
 *
 * Containers are created by conmon (conmon.ts), which holds their standard
 * streams, and started here (`start`). So a container outlives runc and the
 * service alike; a SIGKILL of the service at any instant leaves at most a
 * container runc still lists (running, or `created` between create and
 * start), which the next service adopts or deletes.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Where distributions put runc; PATH first. */
const RUNC_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export type ContainerStatus = 'creating' | 'created' | 'running' | 'paused' | 'stopped';

export interface ContainerState {
  readonly id: string;
  /** The container's first process as the host sees it; 0 once stopped. */
  readonly pid: number;
  readonly status: ContainerStatus;
  readonly bundle: string;
  readonly created: string;
}

export class RuncError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'RuncError';
  }
}

/** The absolute path of runc, or null: found once, so that a changed PATH cannot swap the binary later. */
export function findRunc(envPath = process.env.PATH ?? ''): string | null {
  const dirs = [...envPath.split(path.delimiter).filter((dir) => path.isAbsolute(dir)), ...RUNC_DIRS];
  for (const dir of dirs) {
    const candidate = path.join(dir, 'runc');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export class Runc {
  constructor(
    readonly binary: string,
    /** runc's `--root`: the service's own state directory. */
    readonly stateRoot: string,
  ) {}

  /** `runc start`: runs the process of a container conmon created (conmon.ts). */
  async start(id: string): Promise<void> {
    await this.exec(['start', id]);
  }

  /** The container's state, or null when runc knows no such container. */
  async state(id: string): Promise<ContainerState | null> {
    try {
      return parseState(JSON.parse(await this.exec(['state', id])));
    } catch (err) {
      if (err instanceof RuncError && /does not exist|not exist/.test(err.stderr)) return null;
      throw err;
    }
  }

  /** Signals the container's first process, or every process in it (`all`). */
  async kill(id: string, signal: NodeJS.Signals, options: { all?: boolean } = {}): Promise<void> {
    await this.exec(['kill', ...(options.all ? ['--all'] : []), id, signal]);
  }

  /** Forgets a stopped container (with `force`, SIGKILLs a running one first) and removes its cgroup. */
  async delete(id: string, options: { force?: boolean } = {}): Promise<void> {
    await this.exec(['delete', ...(options.force ? ['--force'] : []), id]);
  }

  async list(): Promise<ContainerState[]> {
    const parsed: unknown = JSON.parse((await this.exec(['list', '--format', 'json'])) || 'null');
    return Array.isArray(parsed) ? parsed.map(parseState) : [];
  }

  private globalArgs(log?: string): string[] {
    return ['--root', this.stateRoot, ...(log ? ['--log', log, '--log-format', 'json'] : [])];
  }

  private async exec(args: string[]): Promise<string> {
    try {
      const { stdout } = await execFileAsync(this.binary, [...this.globalArgs(), ...args], { encoding: 'utf8', timeout: 30_000 });
      return stdout;
    } catch (err) {
      const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
      throw new RuncError(`runc ${args.join(' ')} failed: ${stderr || String(err)}`, stderr);
    }
  }
}

function parseState(raw: unknown): ContainerState {
  const value = raw as Partial<Record<keyof ContainerState, unknown>>;
  if (typeof value.id !== 'string' || typeof value.status !== 'string')
    throw new Error(`runc printed an unexpected state: ${JSON.stringify(raw)}`);
  return {
    id: value.id,
    pid: typeof value.pid === 'number' ? value.pid : 0,
    status: value.status as ContainerStatus,
    bundle: typeof value.bundle === 'string' ? value.bundle : '',
    created: typeof value.created === 'string' ? value.created : '',
  };
}
