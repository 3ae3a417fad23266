import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONSOLE_BACKLOG_LIMIT } from '../../../../src/daemon/local/process/console.js';
import { ConsoleBusyError } from '../../../../src/daemon/local/process/supervisor.js';
import { waitFor, useSupervisorSandbox } from './helpers.js';

/** docs/reference/backups-and-restores.md#durability: console input waiting for a process that does not read it is bounded at 1 MiB. */
describe('ProcessSupervisor console backlog', () => {
  const sandbox = useSupervisorSandbox();
  const { supervisor, server } = sandbox;
  const LINE = `say ${'x'.repeat(4000)}`;

  /** Sends LINE until the supervisor refuses; how many it took. */
  async function fill(send: () => Promise<void>): Promise<number> {
    for (let sent = 0; sent < 10_000; sent++) {
      try {
        await send();
      } catch (err) {
        expect(err).toBeInstanceOf(ConsoleBusyError);
        return sent;
      }
    }
    throw new Error('never refused');
  }

  it('refuses console lines once 1 MiB waits for a process that never reads, and holds no more than that', async () => {
    const { s } = supervisor();
    const target = server({ startup: 'exec sleep 1000', stopCommand: null });
    await s.start(target);
    const sent = await fill(() => s.sendCommand(target.uuid, LINE));
    const queued = sent * (LINE.length + 1);
    // Everything accepted waits (in the pipe and in our queue), and that is at most 1 MiB; the
    // reckoning counts the pipe as holding its full 64 KiB, which it may hold a little less of.
    expect(queued).toBeLessThanOrEqual(CONSOLE_BACKLOG_LIMIT);
    expect(queued).toBeGreaterThan(CONSOLE_BACKLOG_LIMIT - 64 * 1024 - (LINE.length + 1));
    const backlog = s.consoleBacklog(target.uuid);
    expect(backlog).toBeGreaterThanOrEqual(queued);
    expect(backlog).toBeLessThanOrEqual(CONSOLE_BACKLOG_LIMIT);
    // Still refused: nothing was drained, nothing more was queued.
    await expect(s.sendCommand(target.uuid, LINE)).rejects.toBeInstanceOf(ConsoleBusyError);
    expect(s.consoleBacklog(target.uuid)).toBe(backlog);
    // A stop still ends it (by signal: the stop command could not be read anyway).
    await s.stop(target);
    expect(s.state(target.uuid)).toBe('offline');
  });

  it('accepts lines again once the process reads its console, and the lines arrive whole and in order', async () => {
    const { s } = supervisor();
    const go = path.join(sandbox.volumeDir, 'go');
    // Reads nothing until told to, then copies its console into a file.
    const target = server({ startup: `while [ ! -e go ]; do sleep 0.05; done; exec cat > received`, stopCommand: null });
    await s.start(target);
    const sent = await fill(() => s.sendCommand(target.uuid, LINE));
    expect(sent).toBeGreaterThan(0);

    fs.writeFileSync(go, '');
    await waitFor(() => s.consoleBacklog(target.uuid) === 0, 'the backlog to drain', 10_000);
    await s.sendCommand(target.uuid, 'say after');
    const received = path.join(sandbox.volumeDir, 'received');
    await waitFor(() => fs.existsSync(received) && fs.readFileSync(received, 'utf8').endsWith('say after\n'), 'the last line');
    const lines = fs.readFileSync(received, 'utf8').split('\n');
    expect(lines.slice(0, sent).every((l) => l === LINE)).toBe(true);
    expect(lines.slice(sent)).toEqual(['say after', '']);
  });

  it("refuses lines for another instance's process whose console pipe is full, instead of blocking", async () => {
    const target = server({ startup: 'exec sleep 1000', stopCommand: null });
    await sandbox.host(target);
    const { s } = supervisor();
    const sent = await fill(() => s.sendCommand(target.uuid, LINE));
    // Only the pipe holds anything here: no instance queues in memory for a process it does not own.
    expect(sent * (LINE.length + 1)).toBeLessThanOrEqual(64 * 1024);
    expect(s.consoleBacklog(target.uuid)).toBe(0);
  });
});
