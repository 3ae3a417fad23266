/**
 * Disk usage benchmark (issue 11, docs/reference/containment.md's disk limit): `measureDiskUsage`,
 * the descriptor-relative walk a start, a backup, a restore and `/resources`
 * use, over 50,000 files (500 folders of 100, 0–4,000 bytes, under 20 top
 * folders), warm cache, RUNS runs: its time, the files a second, the longest
 * the event loop was held (it yields between slices), and the same tree's
 * `du -sb --apparent-size` and `find -type f -printf %s` as same-run
 * baselines (they follow no descriptor discipline and hold no event loop).
 *
 *   npm run bench:disk -- [--runs 5]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { measureDiskUsage } from '../src/daemon/local/volume/disk-usage.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const RUNS = Number(values.runs);
const DIRS = 500;
const FILES = 100;

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-disk-'));
try {
  for (let d = 0; d < DIRS; d++) {
    const dir = path.join(root, `a${d % 20}`, `d${d}`);
    fs.mkdirSync(dir, { recursive: true });
    for (let f = 0; f < FILES; f++) {
      const size = (d * 7 + f * 13) % 4000;
      fs.writeFileSync(path.join(dir, `f${f}`), Buffer.alloc(size));
    }
  }
  const files = DIRS * FILES;
  for (let run = 0; run < RUNS; run++) {
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const started = performance.now();
    const { bytes, inodes } = await measureDiskUsage(root);
    const ms = performance.now() - started;
    delay.disable();
    // Allocated blocks and inodes, each inode once: what `du -sB1` and `du -s --inodes` count.
    const du = Number(execFileSync('du', ['-sB1', root], { encoding: 'utf8' }).split('\t')[0]);
    const duInodes = Number(execFileSync('du', ['-s', '--inodes', root], { encoding: 'utf8' }).split('\t')[0]);
    if (bytes !== du || inodes !== duInodes)
      throw new Error(`measured ${bytes} bytes and ${inodes} inodes, du says ${du} and ${duInodes}`);
    console.log(
      `run ${run + 1}: ${files} files in ${ms.toFixed(0)} ms (${((files / ms) * 1000).toFixed(0)} files/s), ` +
        `event loop held at most ${(delay.max / 1e6).toFixed(1)} ms`,
    );
  }
  let started = performance.now();
  execFileSync('du', ['-sB1', root]);
  console.log(`baseline du -sB1 (allocated, each inode once: the same figure): ${(performance.now() - started).toFixed(0)} ms`);
  started = performance.now();
  execFileSync('find', [root, '-type', 'f', '-printf', '%s\n'], { stdio: ['ignore', 'ignore', 'inherit'] });
  console.log(`baseline find -type f -printf %s: ${(performance.now() - started).toFixed(0)} ms`);
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
