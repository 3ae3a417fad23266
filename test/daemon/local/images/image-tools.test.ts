/**
 * How image tools run (image-tools.ts): their output reaches the caller line
 * by line, a failure carries its last lines, and one that stalls past its
 * time is ended with everything it started (its own PID namespace).
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { runImageTool } from '../../../../src/daemon/local/images/image-tools.js';

const running = (marker: string) =>
  execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(marker) && !line.includes('ps -eo'));

describe('runImageTool', () => {
  it('passes output on by line and fails with the last lines', async () => {
    const lines: string[] = [];
    await runImageTool('/bin/sh', ['-c', 'echo one; echo two >&2; printf three'], (line) => lines.push(line));
    expect(lines.sort()).toEqual(['one', 'three', 'two']);
    await expect(runImageTool('/bin/sh', ['-c', 'echo why it failed; exit 3'])).rejects.toThrow('sh failed (3): why it failed');
  });

  it('ends a tool that runs past its time, and what it started with it', async () => {
    const marker = `31.${process.pid}`;
    const started = Date.now();
    // The tool starts a grandchild that would outlive a plain kill of the tool.
    const attempt = runImageTool('/bin/sh', ['-c', `sleep ${marker} & sleep ${marker}; wait`], undefined, { timeoutMs: 300 });
    await expect(attempt).rejects.toThrow(/did not finish within/);
    expect(Date.now() - started).toBeLessThan(5_000);
    const deadline = Date.now() + 5_000;
    while (running(marker).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running(marker)).toEqual([]);
  });
});
