/**
 * The disk and inode limits (docs/reference/containment.md) as the files layer applies them to
 * every byte it adds to a volume (docs/reference/files-and-sftp.md): uploads, writes, copies,
 * extractions, archives and SFTP writes.
 *
 * Measuring a volume walks it (volume/disk-usage.ts), which for 100,000
 * files takes a good fraction of a second, so the measurement is kept for a
 * short while (MEASUREMENT_MAX_AGE_MS) and what the service added since it
 * began is counted on top of it. Work in progress holds a reservation: the
 * bytes and entries it has added or is about to. A check compares
 * measured + added since + every reservation of the server with the limit,
 * synchronously, so two writes to one server cannot together pass it.
 *
 * Bytes are counted as written (apparent size); a replaced file's old bytes
 * are not subtracted until the next measurement, which errs on the side of
 * the limit.
 */
import { performance } from 'node:perf_hooks';
import { VolumeFileError, type DaemonServer } from '../../daemon.js';
import { diskLimitBytes, inodeLimit, mibFigure, type VolumeUsage } from '../volume/disk-usage.js';

/** How long a measurement of a volume is reused (what the service adds meanwhile is counted on top). */
export const MEASUREMENT_MAX_AGE_MS = 5_000;

interface Added {
  readonly bytes: number;
  readonly inodes: number;
  readonly at: number;
}

/** What is known of one server's volume. */
class VolumeAccount {
  measured: { usage: VolumeUsage; startedAt: number } | null = null;
  measuring: Promise<void> | null = null;
  reservedBytes = 0;
  reservedInodes = 0;
  /** Committed work, kept until a measurement that began after it includes it. */
  added: Added[] = [];

  /** Usage as far as is known: the measurement, plus what was added since it began, plus what is reserved. */
  current(): VolumeUsage {
    const measured = this.measured!;
    let bytes = measured.usage.bytes + this.reservedBytes;
    let inodes = measured.usage.inodes + this.reservedInodes;
    for (const item of this.added) {
      if (item.at >= measured.startedAt) {
        bytes += item.bytes;
        inodes += item.inodes;
      }
    }
    return { bytes, inodes };
  }
}

/** Bytes and entries some work holds against the server's limits until it commits or releases them. */
export class Reservation {
  private bytes = 0;
  private inodes = 0;
  private open = true;

  constructor(
    private readonly budget: DiskBudget,
    private readonly server: DaemonServer,
  ) {}

  /** Adds to what this work holds; `disk-limit` (and nothing held more) when that would pass a limit. */
  grow(bytes: number, inodes = 0): void {
    if (!this.open) throw new Error('a released reservation cannot grow');
    this.budget.take(this.server, bytes, inodes);
    this.bytes += bytes;
    this.inodes += inodes;
  }

  /** The work is on disk: its bytes count as added until the next measurement sees them. */
  commit(): void {
    if (!this.open) return;
    this.open = false;
    this.budget.settle(this.server, this.bytes, this.inodes, true);
  }

  /** The work was undone (or counted elsewhere): what it held is free again. */
  release(): void {
    if (!this.open) return;
    this.open = false;
    this.budget.settle(this.server, this.bytes, this.inodes, false);
  }
}

export class DiskBudget {
  private readonly accounts = new Map<string, VolumeAccount>();

  constructor(
    /** A fresh measurement of the server's volume. */
    private readonly measure: (server: DaemonServer) => Promise<VolumeUsage>,
    private readonly maxAgeMs = MEASUREMENT_MAX_AGE_MS,
  ) {}

  /** A reservation of `bytes` and `inodes`; `disk-limit` when the server has no room for them. */
  async reserve(server: DaemonServer, bytes = 0, inodes = 0): Promise<Reservation> {
    await this.ready(server);
    const reservation = new Reservation(this, server);
    reservation.grow(bytes, inodes);
    return reservation;
  }

  /** Bytes and entries the server may still add now (null: no limit), for bounds decided up front (an extraction's). */
  async room(server: DaemonServer): Promise<{ bytes: number | null; inodes: number | null }> {
    const byteLimit = diskLimitBytes(server.limits);
    const entryLimit = inodeLimit(server.limits);
    if (byteLimit === null && entryLimit === null) return { bytes: null, inodes: null };
    await this.ready(server);
    const usage = this.account(server).current();
    return {
      bytes: byteLimit === null ? null : Math.max(0, byteLimit - usage.bytes),
      inodes: entryLimit === null ? null : Math.max(0, entryLimit - usage.inodes),
    };
  }

  /** Forgets the measurement (the volume changed behind the files layer's back: a restore, a delete). */
  forget(server: DaemonServer): void {
    const account = this.accounts.get(server.uuid);
    if (account) account.measured = null;
  }

  /** Called by Reservation.grow: synchronous, so concurrent work cannot both pass the check. */
  take(server: DaemonServer, bytes: number, inodes: number): void {
    const byteLimit = diskLimitBytes(server.limits);
    const entryLimit = inodeLimit(server.limits);
    if (byteLimit === null && entryLimit === null) return;
    const account = this.account(server);
    if (account.measured === null) throw new Error('a reservation grew before its volume was measured');
    const usage = account.current();
    if (byteLimit !== null && usage.bytes + bytes > byteLimit) {
      throw new VolumeFileError(
        'disk-limit',
        `This would take the server past its disk limit of ${mibFigure(byteLimit)} MiB (${mibFigure(usage.bytes)} MiB used).`,
      );
    }
    if (entryLimit !== null && usage.inodes + inodes > entryLimit) {
      throw new VolumeFileError('disk-limit', `This would take the server past its limit of ${entryLimit} files and folders.`);
    }
    account.reservedBytes += bytes;
    account.reservedInodes += inodes;
  }

  settle(server: DaemonServer, bytes: number, inodes: number, committed: boolean): void {
    const account = this.accounts.get(server.uuid);
    if (!account) return;
    account.reservedBytes -= bytes;
    account.reservedInodes -= inodes;
    if (committed && (bytes > 0 || inodes > 0)) account.added.push({ bytes, inodes, at: performance.now() });
  }

  private account(server: DaemonServer): VolumeAccount {
    let account = this.accounts.get(server.uuid);
    if (!account) {
      account = new VolumeAccount();
      this.accounts.set(server.uuid, account);
    }
    return account;
  }

  /** Makes sure a measurement younger than maxAgeMs is known (no walk at all for a server without limits). */
  private async ready(server: DaemonServer): Promise<void> {
    if (diskLimitBytes(server.limits) === null && inodeLimit(server.limits) === null) return;
    const account = this.account(server);
    while (account.measured === null || performance.now() - account.measured.startedAt >= this.maxAgeMs) {
      account.measuring ??= this.remeasure(server, account);
      await account.measuring;
    }
  }

  private async remeasure(server: DaemonServer, account: VolumeAccount): Promise<void> {
    const startedAt = performance.now();
    try {
      const usage = await this.measure(server);
      account.measured = { usage, startedAt };
      // What the new measurement began after is in it, or will be in the next: older additions go.
      account.added = account.added.filter((item) => item.at >= startedAt);
    } finally {
      account.measuring = null;
    }
  }
}
