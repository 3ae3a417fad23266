import fs from 'node:fs';

/** A process's resident memory now and at its peak (VmRSS and VmHWM of /proc/<pid>/status; NaN when absent). */
export function memoryOf(pid: number | 'self'): { rssMiB: number; peakRssMiB: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, peakRssMiB: kb('VmHWM') / 1024 };
}
