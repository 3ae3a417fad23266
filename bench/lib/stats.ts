/** Small helpers shared by the benchmarks: timing, percentiles, a plain text table. */

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export interface Timing {
  median: number;
  p95: number;
  runs: number;
}

/** Runs `work` `warmup` times unmeasured, then `runs` times; milliseconds. */
export async function measure<T>(work: () => Promise<T>, opts: { runs: number; warmup: number }): Promise<Timing & { last: T }> {
  let last: T | undefined;
  for (let i = 0; i < opts.warmup; i++) last = await work();
  const samples: number[] = [];
  for (let i = 0; i < opts.runs; i++) {
    const start = process.hrtime.bigint();
    last = await work();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return { median: percentile(samples, 50), p95: percentile(samples, 95), runs: opts.runs, last: last as T };
}

export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

/** A left-aligned first column, right-aligned others. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** A deterministic random source (xorshift32), so every run generates the same data (and a failing test can be replayed from its seed). */
export function seeded(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 0x100000000;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
    /** An index drawn from cumulative weights. */
    weighted: (cumulative: readonly number[]) => {
      const x = next() * cumulative[cumulative.length - 1]!;
      let lo = 0;
      let hi = cumulative.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cumulative[mid]! > x) hi = mid;
        else lo = mid + 1;
      }
      return lo;
    },
  };
}

export function cumulative(weights: readonly number[]): number[] {
  let sum = 0;
  return weights.map((w) => (sum += w));
}
