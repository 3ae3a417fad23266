/** Taking over a dead instance's pid file (docs/reference/power-and-console.md#servers-outlive-the-service's adoption): one adopter at a time, never a changed file. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PidFiles } from '../../../../src/daemon/local/process/pid-files.js';
import { examinePidFile, serializePidRecord, type PidRecord } from '../../../../src/daemon/local/process/pid-record.js';
import { silentLogger } from '../../../../src/daemon/local/process/supervisor-options.js';

const UUID = '0b7e4c52-1f0e-4d4c-8a43-5d0a3c2b1e9f';
const DEAD_OWNER = { pid: 2 ** 22 + 11, startTime: '1', bootId: null };

describe('adopting a pid file', () => {
  let runDir: string;
  let pidFiles: PidFiles;
  beforeEach(() => {
    runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-adopt-'));
    pidFiles = new PidFiles(runDir, silentLogger);
  });
  afterEach(() => fs.rmSync(runDir, { recursive: true, force: true }));

  function deadOwnersFile(): string {
    // This very process stands in for the server: alive, so the record reads `running`.
    const record: PidRecord = {
      pid: process.pid,
      pgid: process.pid,
      startTime: null,
      command: 'sleep',
      startedAt: '2026-11-26T07:00:00.000Z',
      owner: DEAD_OWNER,
      token: 'dead',
      container: `quetzal-${UUID}`,
    };
    const text = serializePidRecord(record);
    fs.writeFileSync(pidFiles.fileOf(UUID), text);
    return text;
  }

  it('rewrites the record naming this instance, keeping the rest, and leaves no lock', async () => {
    const raw = deadOwnersFile();
    const text = await pidFiles.adopt(UUID, examinePidFile(raw)!);
    expect(text).not.toBeNull();
    const record = JSON.parse(fs.readFileSync(pidFiles.fileOf(UUID), 'utf8')) as PidRecord;
    expect(record).toMatchObject({ pid: process.pid, startedAt: '2026-11-26T07:00:00.000Z', container: `quetzal-${UUID}` });
    expect(record.owner?.pid).toBe(process.pid);
    expect(fs.readdirSync(runDir)).toEqual([`${UUID}.pid`]);
  });

  it('lets only one of two adopters at once have it, however their steps interleave', async () => {
    // Many rounds: the second adopter once read the first's lock while it was still empty (created, not yet
    // written), took it for a dead adopter's, removed it and went on too (1 CI run in ~10).
    for (let round = 0; round < 200; round++) {
      const found = examinePidFile(deadOwnersFile())!;
      const results = await Promise.all([pidFiles.adopt(UUID, found), new PidFiles(runDir, silentLogger).adopt(UUID, found)]);
      expect(
        results.filter((text) => text !== null),
        `round ${round}`,
      ).toHaveLength(1);
    }
    expect(fs.readdirSync(runDir)).toEqual([`${UUID}.pid`]);
  });

  it('refuses a file that changed since it was read, and replaces a lock a dead adopter left', async () => {
    const found = examinePidFile(deadOwnersFile())!;
    fs.writeFileSync(`${pidFiles.fileOf(UUID)}.adopt`, serializePidRecord({ ...found.record, owner: DEAD_OWNER }));
    fs.appendFileSync(pidFiles.fileOf(UUID), ' ');
    expect(await pidFiles.adopt(UUID, found)).toBeNull();
    expect(fs.existsSync(`${pidFiles.fileOf(UUID)}.adopt`)).toBe(false);
    expect(await pidFiles.adopt(UUID, examinePidFile(fs.readFileSync(pidFiles.fileOf(UUID), 'utf8'))!)).not.toBeNull();
  });
});
