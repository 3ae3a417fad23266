/**
 * The lstats of a large folder's entries, spread over worker threads
 * (listing.ts): each batch of names is lstat'ed in a worker, through the held
 * folder's /proc/self/fd path (the same process, so the same descriptor), and
 * comes back as numbers in a transferred Float64Array, never as Stats objects
 * (each holds four Dates: most of a 100,000-entry listing's garbage).
 *
 * Why threads: an lstat through /proc/self/fd/N/name walks procfs by
 * reference (no RCU walk), about twice a plain path's cost, and a folder of
 * 100,000 files spent most of its listing there (docs/PERFORMANCE.md,
 * "Files"). Two workers use both cores while the event loop stays free.
 *
 * The workers are started on the first large listing, kept (holding the
 * process open only while they have work), and run plain JavaScript given as source
 * (`eval`), so that the bundle (scripts/build.js) needs no second file.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';

/** Numbers per entry in a batch's answer: mode, size, birthtimeMs, ctimeMs, mtimeMs. A mode of -1: gone. */
export const STAT_FIELDS = 5;
const MAX_WORKERS = 2;

/**
 * The worker: CommonJS, as `eval` workers run. Answers `{ id, stats, order }`
 * (`order`: the batch's indices in Wings' order, folders first, then by name
 * in UTF-16 code units, so that the listing's final sort meets sorted runs
 * and merges them), or `{ id, code, message }` on a failure other than ENOENT.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
parentPort.on('message', ({ id, folder, names }) => {
  const stats = new Float64Array(names.length * ${STAT_FIELDS});
  for (let i = 0; i < names.length; i++) {
    const at = i * ${STAT_FIELDS};
    let stat;
    try {
      stat = fs.lstatSync(folder + '/' + names[i]);
    } catch (err) {
      if (err && err.code === 'ENOENT') { stats[at] = -1; continue; }
      parentPort.postMessage({ id, code: err && err.code, message: String(err && err.message) });
      return;
    }
    stats[at] = stat.mode;
    stats[at + 1] = stat.size;
    stats[at + 2] = stat.birthtimeMs;
    stats[at + 3] = stat.ctimeMs;
    stats[at + 4] = stat.mtimeMs;
  }
  const order = new Uint32Array(names.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  const rank = (i) => ((stats[i * ${STAT_FIELDS}] & 0o170000) === 0o040000 ? 0 : 1);
  order.sort((a, b) => rank(a) - rank(b) || (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : 0));
  parentPort.postMessage({ id, stats, order }, [stats.buffer, order.buffer]);
});
`;

/** A batch's answer: STAT_FIELDS numbers per name, and the order to list them in. */
export interface LstatBatch {
  readonly stats: Float64Array;
  readonly order: Uint32Array;
}

interface Answer {
  readonly id: number;
  readonly stats?: Float64Array;
  readonly order?: Uint32Array;
  readonly code?: string;
  readonly message?: string;
}

interface Pending {
  readonly resolve: (batch: LstatBatch) => void;
  readonly reject: (err: Error) => void;
}

class LstatWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private exited = false;

  constructor() {
    this.worker = new Worker(WORKER_SOURCE, { eval: true });
    this.worker.on('message', (answer: Answer) => this.settle(answer));
    this.worker.on('error', (err) => this.failAll(err));
    this.worker.on('exit', (code) => {
      this.exited = true;
      this.failAll(new Error(`an lstat worker exited (${code})`));
    });
    // Held open only while it has work (an awaited listing must not see the process end under it); after the listeners, which ref it.
    this.worker.unref();
  }

  get busy(): number {
    return this.pending.size;
  }

  get alive(): boolean {
    return !this.exited;
  }

  lstat(id: number, folder: string, names: readonly string[]): Promise<LstatBatch> {
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, folder, names });
    });
  }

  private settle(answer: Answer): void {
    const pending = this.pending.get(answer.id);
    if (!pending) return;
    this.pending.delete(answer.id);
    if (this.pending.size === 0) this.worker.unref();
    if (answer.stats && answer.order) pending.resolve({ stats: answer.stats, order: answer.order });
    else pending.reject(Object.assign(new Error(answer.message ?? 'lstat failed'), { code: answer.code, syscall: 'lstat' }));
  }

  private failAll(err: Error): void {
    for (const pending of this.pending.values()) pending.reject(err);
    this.pending.clear();
    this.worker.unref();
  }
}

let workers: LstatWorker[] = [];
let nextId = 0;

/**
 * The lstats of `names` in `folder` (a held folder's /proc/self/fd path), on
 * the least busy worker.
 */
export function lstatInWorker(folder: string, names: readonly string[]): Promise<LstatBatch> {
  workers = workers.filter((worker) => worker.alive);
  const wanted = Math.max(1, Math.min(MAX_WORKERS, os.availableParallelism()));
  while (workers.length < wanted) workers.push(new LstatWorker());
  let chosen = workers[0]!;
  for (const worker of workers) if (worker.busy < chosen.busy) chosen = worker;
  return chosen.lstat(nextId++, folder, names);
}
