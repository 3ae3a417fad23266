/**
 * Memory, CPU, disk and uptime from the socket's `stats` frames (about every
 * 2 s while the server runs), with the last two minutes of memory and CPU as
 * graphs; cleared when the server goes offline, so old figures never read as
 * live ones.
 */
import { useState } from 'preact/hooks';
import type { Server } from '../../api/types';
import { bytes, uptime } from '../../lib/format';
import { useSocketFrames } from '../../lib/server-context';
import type { ServerSocket } from '../../lib/socket';
import { Sparkline } from '../ui';

const SAMPLES = 60;

interface Stats {
  memory_bytes: number;
  memory_limit_bytes: number;
  cpu_absolute: number;
  disk_bytes: number;
  uptime: number;
}

/** A `stats` frame's argument: a JSON string (Wings sends it so), or already an object. */
function parseStats(raw: unknown): Stats | null {
  try {
    const value = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Partial<Stats> | null;
    if (!value || typeof value.memory_bytes !== 'number' || typeof value.cpu_absolute !== 'number') return null;
    return {
      memory_bytes: value.memory_bytes,
      memory_limit_bytes: value.memory_limit_bytes ?? 0,
      cpu_absolute: value.cpu_absolute,
      disk_bytes: value.disk_bytes ?? 0,
      uptime: value.uptime ?? 0,
    };
  } catch {
    return null;
  }
}

export function ConsoleFigures({ socket, server }: { socket: ServerSocket | null; server: Server }) {
  const [stats, setStats] = useState<Stats | null>(null);
  const [memory, setMemory] = useState<number[]>([]);
  const [cpu, setCpu] = useState<number[]>([]);

  useSocketFrames(socket, (frame) => {
    if (frame.event === 'status' && frame.args[0] === 'offline') {
      // Stopped or killed: no memory in use, no uptime.
      setStats(null);
      setMemory([]);
      setCpu([]);
    }
    if (frame.event !== 'stats') return;
    const sample = parseStats(frame.args[0]);
    if (!sample) return;
    setStats(sample);
    setMemory((values) => values.concat(sample.memory_bytes).slice(-SAMPLES));
    setCpu((values) => values.concat(sample.cpu_absolute).slice(-SAMPLES));
  });

  const { limits } = server.attributes;
  const memoryLimit = stats?.memory_limit_bytes || limits.memory * 1024 * 1024;
  const cpuLimit = limits.cpu || 100;
  return (
    <>
      <div class="card stat">
        <div class="stat-head">
          <span>Memory</span>
          <strong>
            {stats ? bytes(stats.memory_bytes) : '—'}
            {memoryLimit > 0 && <span class="muted"> / {bytes(memoryLimit)}</span>}
          </strong>
        </div>
        <Sparkline values={memory} floor={16 * 1024 * 1024} label="Memory use over the last two minutes" />
      </div>
      <div class="card stat">
        <div class="stat-head">
          <span>CPU</span>
          <strong>
            {stats ? `${stats.cpu_absolute.toFixed(1)} %` : '—'}
            {limits.cpu > 0 && <span class="muted"> / {cpuLimit} %</span>}
          </strong>
        </div>
        <Sparkline values={cpu} floor={5} label="CPU use over the last two minutes" />
      </div>
      <dl class="card facts">
        <dt>Disk</dt>
        <dd>{stats ? bytes(stats.disk_bytes) : '—'}</dd>
        <dt>Uptime</dt>
        <dd>{stats && stats.uptime > 0 ? uptime(stats.uptime) : '—'}</dd>
      </dl>
    </>
  );
}
