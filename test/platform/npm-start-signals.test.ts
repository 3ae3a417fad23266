import { afterEach, describe, expect, it } from 'vitest';
import { groupGone, portInUse, startDetached, waitHealthy, type StartedService } from './service-process.js';

/**
 * A process manager starts `npm start` and stops it with SIGTERM (an operator
 * with Ctrl-C, SIGINT): the whole service must stop gracefully with it. Before
 * the start script exec'd node, npm's shell died of the signal npm forwarded
 * and left node running, orphaned, still holding the port and the database.
 */

/** An idle service stops in about a second; this bounds "gracefully" with room for a loaded machine. */
const GRACEFUL_MS = 30_000;

/**
 * To npm alone (a process manager that signals its main process), and to the
 * whole group: Ctrl-C in a terminal, or systemd's default of signalling every
 * process of the unit. Then the service gets the signal twice, its own and
 * npm's forwarded copy, which must not count as "send it again to stop at once".
 */
const cases = [
  { signal: 'SIGTERM', to: 'npm' },
  { signal: 'SIGINT', to: 'npm' },
  { signal: 'SIGTERM', to: 'group' },
  { signal: 'SIGINT', to: 'group' },
] as const;

describe.each(cases)('$signal to $to of npm start', ({ signal, to }) => {
  let service: StartedService | undefined;
  afterEach(() => service?.dispose());

  it('stops the whole service gracefully: the port is free and no process of its group remains', async () => {
    service = await startDetached('npm', ['start']);
    // prestart bundles the sources first.
    await waitHealthy(service, 90_000);
    const pgid = service.proc.pid!;

    process.kill(to === 'npm' ? pgid : -pgid, signal);
    const stoppedBy = Date.now() + GRACEFUL_MS;
    const exit = await Promise.race([
      service.exited,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), GRACEFUL_MS)),
    ]);
    expect(exit, `npm did not exit within ${GRACEFUL_MS} ms:\n${service.output()}`).toBeDefined();

    expect(await groupGone(pgid, Math.max(0, stoppedBy - Date.now()))).toEqual([]);
    expect(await portInUse(service.port)).toBe(false);
    // It shut down (pino's "stopped" is its last line), rather than being killed.
    const messages = service
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => (JSON.parse(line) as { msg?: string }).msg);
    expect(messages).toContain('shutting down');
    expect(messages.at(-1)).toBe('stopped');
    // npm passes on the service's own exit status.
    expect(exit).toEqual({ code: 0, signal: null });
  }, 150_000);
});
