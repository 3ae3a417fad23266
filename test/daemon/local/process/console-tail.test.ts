import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rotateConsoleLog } from '../../../../src/daemon/local/process/console-log.js';
import { CONSOLE_LINE_MAX_CHARS, ConsoleTails } from '../../../../src/daemon/local/process/console-tail.js';

const UUID = '3f0c6a0e-8f7a-4c1e-9a55-0c1d2e3f4a5b';

async function eventually(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Following a console log for the websocket (docs/reference/power-and-console.md#websocket): lines, rotation, one reader per server, history. */
describe('console tail', () => {
  let dir: string;
  let log: string;
  let tails: ConsoleTails;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-tail-'));
    log = path.join(dir, `${UUID}.log`);
    tails = new ConsoleTails(dir);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('hands over lines written after the watch began, whole, in order, without their line ends', async () => {
    fs.writeFileSync(log, 'before the watch\n');
    const lines: string[] = [];
    const stop = tails.watch(UUID, (line) => lines.push(line));
    fs.appendFileSync(log, 'one\r\ntw');
    fs.appendFileSync(log, 'o\nthr');
    await eventually(() => lines.length === 2);
    fs.appendFileSync(log, 'ee\n');
    // A character split between two writes comes out whole.
    const euro = Buffer.from('€ sign\n');
    fs.appendFileSync(log, euro.subarray(0, 1));
    fs.appendFileSync(log, euro.subarray(1));
    await eventually(() => lines.length === 4);
    expect(lines).toEqual(['one', 'two', 'three', '€ sign']);
    stop();
  });

  it('cuts a line at the cap and drops the rest of it', async () => {
    const lines: string[] = [];
    const stop = tails.watch(UUID, (line) => lines.push(line));
    fs.appendFileSync(log, `${'a'.repeat(CONSOLE_LINE_MAX_CHARS + 5000)}\nnext\n`);
    await eventually(() => lines.length === 2);
    expect(lines[0]).toBe('a'.repeat(CONSOLE_LINE_MAX_CHARS));
    expect(lines[1]).toBe('next');
    stop();
  });

  it('follows a log that does not exist yet', async () => {
    const lines: string[] = [];
    const stop = tails.watch(UUID, (line) => lines.push(line));
    fs.writeFileSync(log, 'first\n');
    await eventually(() => lines.length === 1);
    expect(lines).toEqual(['first']);
    stop();
  });

  it('loses nothing across a rotation (copy and truncate): the unread rest is read from .log.1', async () => {
    const lines: string[] = [];
    const stop = tails.watch(UUID, (line) => lines.push(line));
    let written = 0;
    const write = (n: number) => {
      let text = '';
      for (let i = 0; i < n; i++) text += `line ${written++}\n`;
      fs.appendFileSync(log, text);
    };
    write(100);
    await eventually(() => lines.length === 100);
    // Written and rotated away before the reader could look: only .log.1 has them.
    write(50);
    expect(await rotateConsoleLog(log, 1)).toBe(true);
    write(20);
    await eventually(() => lines.length === 170);
    // The same, all in one turn of the event loop, so that the reader certainly saw none of it before the rotation.
    write(30);
    fs.copyFileSync(log, `${log}.1`);
    fs.truncateSync(log, 0);
    write(10);
    await eventually(() => lines.length === 210);
    expect(lines).toEqual(Array.from({ length: 210 }, (_, i) => `line ${i}`));
    stop();
  });

  it('reads each log once for all its watchers, and stops when the last one goes', async () => {
    const a: string[] = [];
    const b: string[] = [];
    const stopA = tails.watch(UUID, (line) => a.push(line));
    const stopB = tails.watch(UUID, (line) => b.push(line));
    expect(tails.following).toBe(1);
    fs.appendFileSync(log, 'shared\n');
    await eventually(() => a.length === 1 && b.length === 1);
    stopA();
    stopA();
    expect(tails.following).toBe(1);
    fs.appendFileSync(log, 'only b\n');
    await eventually(() => b.length === 2);
    expect(a).toEqual(['shared']);
    stopB();
    expect(tails.following).toBe(0);
  });

  it('gives the last complete lines as history, from .log.1 when .log has too few', async () => {
    fs.writeFileSync(`${log}.1`, Array.from({ length: 100 }, (_, i) => `old ${i}\n`).join(''));
    fs.writeFileSync(log, 'new 0\nnew 1\r\nstill being writ');
    expect(await tails.history(UUID, 3)).toEqual(['old 99', 'new 0', 'new 1']);
    expect(await tails.history(UUID, 150)).toHaveLength(102);
    expect((await tails.history(UUID, 150))[0]).toBe('old 0');
    expect(await tails.history(UUID, 2)).toEqual(['new 0', 'new 1']);
    expect(await tails.history('0e1d2c3b-aaaa-4bbb-8ccc-000000000000', 150)).toEqual([]);
    // A long log: only its end is read.
    fs.writeFileSync(log, Array.from({ length: 100_000 }, (_, i) => `many ${i}\n`).join(''));
    const last = await tails.history(UUID, 150);
    expect(last).toHaveLength(150);
    expect(last[0]).toBe('many 99850');
    expect(last.at(-1)).toBe('many 99999');
  });

  it('refuses a server id that could name another file', () => {
    expect(() => tails.watch('../etc', () => {})).toThrow();
  });

  it("reads conmon's k8s-file records as the server's lines: P records joined, both streams, plain lines the service adds", async () => {
    const lines: string[] = [];
    const stop = tails.watch(UUID, (line) => lines.push(line));
    const at = '2026-11-26T07:30:25.261286931+00:00';
    fs.appendFileSync(log, `${at} stdout F hello\n${at} stdout P par`);
    fs.appendFileSync(log, `tial\n${at} stdout P , continued\n${at} stdout F  and ended\n`);
    fs.appendFileSync(log, `${at} stderr F an error\nserver killed: out of memory\n`);
    await eventually(() => lines.length === 4);
    expect(lines).toEqual(['hello', 'partial, continued and ended', 'an error', 'server killed: out of memory']);
    stop();
    expect(await tails.history(UUID, 10)).toEqual(lines);
  });

  it('follows a log renewed by a rename over it (conmon at its cap): the old file is read to its end first', async () => {
    const at = '2026-11-26T07:30:25.261286931+00:00';
    fs.writeFileSync(log, '');
    const lines: string[] = [];
    const stop = tails.watch(UUID, (line) => lines.push(line));
    fs.appendFileSync(log, `${at} stdout F one\n`);
    await eventually(() => lines.length === 1);
    // Written to the old file after the reader last looked, then the new file renamed over it.
    const fresh = `${log}.tmp`;
    const old = fs.openSync(log, 'a');
    fs.writeSync(old, `${at} stdout F two\n`);
    fs.writeFileSync(fresh, `${at} stdout F three\n`);
    fs.renameSync(fresh, log);
    fs.writeSync(old, `${at} stdout F lost to no one\n`);
    fs.closeSync(old);
    await eventually(() => lines.length === 4);
    expect(lines).toEqual(['one', 'two', 'lost to no one', 'three']);
    fs.appendFileSync(log, `${at} stdout F four\n`);
    await eventually(() => lines.length === 5);
    expect(lines.at(-1)).toBe('four');
    stop();
  });

  it('skips ahead when far behind, resuming at a whole line, and never holds more than a line', async () => {
    const lines: string[] = [];
    const stop = tails.watch(UUID, (line) => lines.push(line));
    // 72 MiB at once: more than the reader lets itself fall behind (64 MiB).
    const line = `${'y'.repeat(99)}\n`;
    const block = line.repeat((8 * 1024 * 1024) / 100);
    for (let i = 0; i < 9; i++) fs.appendFileSync(log, block);
    fs.appendFileSync(log, 'the end\n');
    await eventually(() => lines.at(-1) === 'the end', 20_000);
    expect(lines.length).toBeLessThan((9 * 8 * 1024 * 1024) / 100);
    expect(lines.slice(0, -1).every((seen) => seen === 'y'.repeat(99))).toBe(true);
    stop();
  });
});
