import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../src/config.js';
import { rotateConsoleLog } from '../../../../src/daemon/local/process/console-log.js';
import { waitFor, useSupervisorSandbox } from './helpers.js';

/** docs/reference/backups-and-restores.md#durability: a server's console log is rotated at CONSOLE_LOG_MB, keeping one previous file. */
describe('console log rotation', () => {
  const sandbox = useSupervisorSandbox();
  const { supervisor, server, logOf } = sandbox;
  const LIMIT = Math.round(0.01 * 1024 * 1024); // CONSOLE_LOG_MB=0.01
  const previousOf = (uuid: string) => path.join(sandbox.logDir, `${uuid}.log.1`);
  const numbers = (text: string) => [...text.matchAll(/^line (\d+) /gm)].map((m) => Number(m[1]));

  /** Prints `lines` numbered lines of about 110 bytes, ten every 5 ms, then "done", then idles. */
  const printer = (lines: number) =>
    `node -e 'let i = 0; const t = setInterval(() => { for (let k = 0; k < 10 && i < ${lines}; k++) console.log("line " + i++ + " " + "x".repeat(100)); if (i >= ${lines}) { clearInterval(t); console.log("done"); setInterval(() => {}, 1000); } }, 5)'`;

  it("rotates a running server's log at the limit: <uuid>.log.1 holds the previous part, <uuid>.log the newest output", async () => {
    const { s } = supervisor({ consoleLogBytes: LIMIT, consoleLogCheckMs: 50 });
    const target = server({ startup: printer(3000), stopCommand: null });
    await s.start(target);
    // The last line may already have been rotated into .log.1 by the time it is looked for.
    const both = () =>
      (fs.existsSync(previousOf(target.uuid)) ? fs.readFileSync(previousOf(target.uuid), 'utf8') : '') + logOf(target.uuid);
    await waitFor(() => both().includes('done'), 'the last line', 15_000);
    await waitFor(() => fs.statSync(path.join(sandbox.logDir, `${target.uuid}.log`)).size < LIMIT, 'the last rotation', 5_000);

    const current = logOf(target.uuid);
    const previous = fs.readFileSync(previousOf(target.uuid), 'utf8');
    // About 330 KB were printed: many rotations, and no file is much past the limit (at most one check's output more).
    const slack = 64 * 1024;
    expect(Buffer.byteLength(previous)).toBeGreaterThanOrEqual(LIMIT);
    expect(Buffer.byteLength(previous)).toBeLessThan(LIMIT + slack);
    expect(Buffer.byteLength(current)).toBeLessThan(LIMIT);
    // The newest output is in <uuid>.log, the part just before it in .log.1, both whole lines in order.
    // (A check may rotate once more after the last line, leaving <uuid>.log empty and "done" in .log.1.)
    expect((previous + current).endsWith('done\n')).toBe(true);
    const inCurrent = numbers(current);
    const inPrevious = numbers(previous);
    expect([...inPrevious, ...inCurrent].at(-1)).toBe(2999);
    expect(inPrevious.at(-1)!).toBeLessThan(inCurrent[0] ?? 3000);
    for (const list of [inPrevious, inCurrent]) expect(list).toEqual([...list].sort((a, b) => a - b));
    expect(
      previous
        .split('\n')
        .slice(0, -1)
        .every((l) => /^(line \d+ x{100}|done)$/.test(l)),
    ).toBe(true);
    // No other file is left beside them.
    expect(fs.readdirSync(sandbox.logDir).sort()).toEqual([`${target.uuid}.log`, `${target.uuid}.log.1`]);
    await s.kill(target);
  });

  it('rotates a log already past the limit when the server starts, and appends below the limit', async () => {
    const { s } = supervisor({ consoleLogBytes: LIMIT, consoleLogCheckMs: 60_000 });
    const target = server({ startup: 'echo started; exec sleep 1000', stopCommand: null });
    fs.mkdirSync(sandbox.logDir, { recursive: true });
    const old = 'old run\n'.repeat(LIMIT / 8 + 1);
    fs.writeFileSync(path.join(sandbox.logDir, `${target.uuid}.log`), old);
    fs.writeFileSync(previousOf(target.uuid), 'older run\n');
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('started'), 'the first line');
    expect(logOf(target.uuid)).toBe('started\n');
    expect(fs.readFileSync(previousOf(target.uuid), 'utf8')).toBe(old);
    await s.kill(target);

    // Under the limit, a new run appends.
    await s.start(target);
    await waitFor(() => logOf(target.uuid) === 'started\nstarted\n', 'the second run');
    await s.kill(target);
  });

  it('leaves a log under the limit alone, and copes with no log at all', async () => {
    const file = path.join(sandbox.dir, 'small.log');
    expect(await rotateConsoleLog(file, 10)).toBe(false);
    fs.writeFileSync(file, '123456789');
    expect(await rotateConsoleLog(file, 10)).toBe(false);
    fs.appendFileSync(file, '0');
    expect(await rotateConsoleLog(file, 10)).toBe(true);
    expect(fs.readFileSync(`${file}.1`, 'utf8')).toBe('1234567890');
    expect(fs.readFileSync(file, 'utf8')).toBe('');
  });

  it('a rotation cut short by a crash loses no output: the next one starts over', async () => {
    const file = path.join(sandbox.dir, 'crashed.log');
    fs.writeFileSync(file, 'a'.repeat(20));
    // What a SIGKILL between the rename and the truncation leaves: .log.1 a copy of the log's head, the log whole.
    fs.writeFileSync(`${file}.1`, 'a'.repeat(12));
    fs.writeFileSync(`${file}.1.tmp`, 'partial');
    expect(await rotateConsoleLog(file, 10)).toBe(true);
    expect(fs.readFileSync(`${file}.1`, 'utf8')).toBe('a'.repeat(20));
    expect(fs.existsSync(`${file}.1.tmp`)).toBe(false);
    expect(fs.readFileSync(file, 'utf8')).toBe('');
  });

  it('keeps a rotated log private (docs/reference/containment.md), even one written readable before that rule', async () => {
    fs.mkdirSync(sandbox.logDir, { recursive: true });
    const log = path.join(sandbox.logDir, 'old.log');
    fs.writeFileSync(log, 'x'.repeat(LIMIT + 1));
    fs.chmodSync(log, 0o644);
    expect(await rotateConsoleLog(log, LIMIT)).toBe(true);
    expect(fs.statSync(`${log}.1`).mode & 0o777).toBe(0o600);
  });

  it('reads CONSOLE_LOG_MB: default 50, fractions allowed, nothing but a positive number', () => {
    expect(loadConfig({}).consoleLogMb).toBe(50);
    expect(loadConfig({ CONSOLE_LOG_MB: '0.01' }).consoleLogMb).toBe(0.01);
    expect(loadConfig({ CONSOLE_LOG_MB: '200' }).consoleLogMb).toBe(200);
    for (const bad of ['0', '-1', 'abc', '1e3', '0.0', '2000000']) {
      expect(() => loadConfig({ CONSOLE_LOG_MB: bad }), bad).toThrow(ConfigError);
    }
  });
});
