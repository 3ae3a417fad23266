/**
 * `<runDir>/<uuid>.pid`: the machine-wide record of which server runs, shared
 * by every service instance on the same DATA_DIR (see "Several instances on
 * one machine" in supervisor.ts). A claim is created before anything is
 * spawned; the full record replaces it once the process runs.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { startFailure } from './errors.js';
import { errnoCode, noop, randomToken } from './helpers.js';
import { ownerAlive, thisInstance } from './owner.js';
import { examinePidFile, serializePidRecord, type PidFileContents, type PidRecord } from './pid-record.js';
import { readStartTime } from './proc.js';
import { isSafeUuid, type ProcessLogger, type SupervisedServer } from './supervisor-options.js';
import { readText, removeIfUnchanged } from './text-files.js';
import { pollDelay, sleep } from './waiting.js';

/** How long a start waits for a live instance to remove the pid file of its process that has just ended. */
const CLAIM_WAIT_MS = 5_000;
/** A bound on claim attempts, against a pid file that keeps changing under us. */
const MAX_CLAIM_ATTEMPTS = 200;

/** A pid file this supervisor created before spawning: its record and its exact text. */
export interface Claim {
  record: PidRecord;
  text: string;
}

/** What `record` needs of a spawned process: the pid file's text is kept on it, to remove the file only while it still holds that. */
export interface RecordedProcess {
  readonly pid: number;
  readonly container: string | null;
  readonly target: { readonly uuid: string };
  pidFile: string;
}

export class PidFiles {
  constructor(
    readonly runDir: string,
    private readonly log: ProcessLogger,
  ) {}

  fileOf(serverUuid: string): string {
    return path.join(this.runDir, `${serverUuid}.pid`);
  }

  readSync(serverUuid: string): PidFileContents | null {
    if (!isSafeUuid(serverUuid)) return null;
    const file = this.fileOf(serverUuid);
    // Most servers are offline: existsSync answers that without building an error to throw.
    if (!fsSync.existsSync(file)) return null;
    let raw: string;
    try {
      raw = fsSync.readFileSync(file, 'utf8');
    } catch {
      return null;
    }
    return examinePidFile(raw);
  }

  async read(serverUuid: string): Promise<PidFileContents | null> {
    if (!isSafeUuid(serverUuid)) return null;
    const raw = await readText(this.fileOf(serverUuid));
    return raw === null ? null : examinePidFile(raw);
  }

  /**
   * Creates the pid file, as a claim, before anything is spawned: a hard link
   * fails when the file exists, so of two instances starting the same server
   * only one goes on. Resolves with the claim, or null when the server runs
   * (or is being started) already, here or elsewhere.
   */
  async claim(target: SupervisedServer, startup: string): Promise<Claim | null> {
    const file = this.fileOf(target.uuid);
    const record: PidRecord = {
      pid: null,
      pgid: null,
      startTime: null,
      command: startup,
      startedAt: new Date().toISOString(),
      owner: thisInstance(),
      token: randomToken(),
      container: null,
    };
    const text = serializePidRecord(record);
    const temporary = `${file}.${record.token}.tmp`;
    await fs.writeFile(temporary, text);
    try {
      const patience = Date.now() + CLAIM_WAIT_MS;
      for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
        try {
          await fs.link(temporary, file);
          return { record, text };
        } catch (err) {
          if (errnoCode(err) !== 'EEXIST') throw startFailure(target, err);
        }
        const raw = await readText(file);
        if (raw === null) continue; // removed meanwhile
        const existing = examinePidFile(raw);
        if (existing && existing.state !== 'offline') {
          this.log.info(
            { serverUuid: target.uuid, pid: existing.record.pid, ownerPid: existing.record.owner?.pid },
            'server process already runs under another instance; not starting a second one',
          );
          return null;
        }
        // Its process is gone. A live owner removes the file itself once it has noticed: give it a moment.
        if (existing && ownerAlive(existing.record.owner) && Date.now() < patience) {
          await sleep(pollDelay(attempt));
          continue;
        }
        await removeIfUnchanged(file, raw);
      }
      throw startFailure(target, new Error(`its pid file ${file} keeps changing`));
    } finally {
      await fs.rm(temporary, { force: true });
    }
  }

  /**
   * Replaces the claim with the full record, via a temporary file and a
   * rename, so a crash never leaves half a pid file. Nobody else replaces a
   * claim while its owner lives, so the rename overwrites our own claim.
   */
  async record(proc: RecordedProcess, claim: PidRecord): Promise<void> {
    const record: PidRecord = {
      ...claim,
      pid: proc.pid,
      pgid: proc.pid,
      startTime: await readStartTime(proc.pid),
      container: proc.container,
      startedAt: new Date().toISOString(),
    };
    const text = serializePidRecord(record);
    const file = this.fileOf(proc.target.uuid);
    // A fresh name: the claim's temporary file was a hard link to the pid file itself.
    const temporary = `${file}.${randomToken()}.tmp`;
    try {
      await fs.writeFile(temporary, text);
      await fs.rename(temporary, file);
      proc.pidFile = text;
    } catch (err) {
      await fs.rm(temporary, { force: true }).catch(noop);
      this.log.error(
        { err, serverUuid: proc.target.uuid, pid: proc.pid },
        'could not write the pid file; a crash would leave this process unnoticed',
      );
    }
  }

  /**
   * Takes over a running server whose owner died (docs/reference/power-and-console.md#servers-outlive-the-service's adoption): the
   * pid file is rewritten with this instance as its owner, the rest of the
   * record (pid, start time, container) kept. Two instances adopting at once
   * are kept apart by `<uuid>.pid.adopt`, created whole and exclusively (createWhole) and naming its
   * holder (one a SIGKILL left behind names a dead owner and is replaced).
   * Resolves with the new text, or null when the file changed meanwhile or
   * another live instance is adopting it. The pid file never goes away
   * meanwhile, so no start can claim the server in between.
   */
  async adopt(serverUuid: string, found: PidFileContents): Promise<string | null> {
    const file = this.fileOf(serverUuid);
    const lock = `${file}.adopt`;
    const owner = thisInstance();
    for (let attempt = 0; ; attempt++) {
      if (await createWhole(lock, serializePidRecord({ ...found.record, owner, token: randomToken() }))) break;
      if (attempt > 0) return null;
      // The lock is never seen half written (createWhole), so one that does not read as a record is not another adopter's.
      const held = examinePidFile((await readText(lock)) ?? '');
      if (held && ownerAlive(held.record.owner)) return null;
      await fs.rm(lock, { force: true });
    }
    try {
      if ((await readText(file)) !== found.raw) return null;
      const text = serializePidRecord({ ...found.record, owner, token: randomToken() });
      const temporary = `${file}.${randomToken()}.tmp`;
      try {
        await fs.writeFile(temporary, text);
        await fs.rename(temporary, file);
      } catch (err) {
        await fs.rm(temporary, { force: true }).catch(noop);
        throw err;
      }
      return text;
    } finally {
      await fs.rm(lock, { force: true });
    }
  }

  /** Only removes the file while it still holds `text`: a newer process of the same server may have replaced it. */
  async remove(serverUuid: string, text: string): Promise<void> {
    await removeIfUnchanged(this.fileOf(serverUuid), text).catch((err: unknown) => {
      this.log.warn({ err, serverUuid }, 'could not remove the pid file');
    });
  }
}

/**
 * Creates `file` holding `text`, whole or not at all: written to a temporary
 * first, then hard-linked to the name, which fails if the name exists. (An
 * exclusive create then a write would let a reader meet the empty file in
 * between, and take it for a dead adopter's.) False when the name exists or
 * cannot be made; a SIGKILL before the link leaves only the temporary.
 */
async function createWhole(file: string, text: string): Promise<boolean> {
  const temporary = `${file}.${randomToken()}.tmp`;
  try {
    await fs.writeFile(temporary, text);
    await fs.link(temporary, file);
    return true;
  } catch {
    return false;
  } finally {
    await fs.rm(temporary, { force: true }).catch(noop);
  }
}

/** The servers a pid file in `runDir` names (running, starting or left by a gone instance); none when the folder is missing. */
export function pidFileServers(runDir: string): string[] {
  let names: string[];
  try {
    names = fsSync.readdirSync(runDir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const match = /^([A-Za-z0-9_-]+)\.pid$/.exec(name);
    return match ? [match[1]!] : [];
  });
}
