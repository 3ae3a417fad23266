/**
 * What an SFTP session logs (docs/reference/files-and-sftp.md; Wings' sftp events, as Pterodactyl
 * names them): `server:sftp.write` (an existing file written), `.create` (a
 * new file), `.create-directory`, `.delete` with `{files: [...]}`, and
 * `.rename` with `{from, to}`. Entries carry the user, the client's address
 * and `using_sftp: true` (Pterodactyl marks SFTP entries so).
 *
 * Batched as Wings does: a burst of operations of one kind (an `mput` of a
 * thousand files) becomes one entry per kind per FLUSH_MS listing every path,
 * not a thousand entries. A rename is its own entry (its properties name one
 * pair). What is pending is written when the session ends. The file change
 * itself is on disk before its entry is written (a volume is no database):
 * a crash in between loses at most FLUSH_MS of entries.
 */
import type { Actor } from '../../actor.js';
import type { Queryable } from '../../db/database.js';
import type { Clock } from '../../clock.js';
import { recordActivities, recordActivity } from '../activity/activity.recorder.js';

export type BatchedSftpEvent = 'server:sftp.write' | 'server:sftp.create' | 'server:sftp.create-directory' | 'server:sftp.delete';

export const FLUSH_MS = 3_000;

export class SftpActivity {
  private readonly pending = new Map<BatchedSftpEvent, Set<string>>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: { db: Queryable; clock: Clock; onError: (err: unknown) => void },
    private readonly serverId: number,
    private readonly actor: Actor,
  ) {}

  /** Notes a path for its kind's next entry. */
  note(event: BatchedSftpEvent, path: string): void {
    let paths = this.pending.get(event);
    if (!paths) this.pending.set(event, (paths = new Set()));
    paths.add(path);
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
      this.timer.unref();
    }
  }

  /** A rename, logged at once. */
  renamed(from: string, to: string): Promise<void> {
    return this.enqueue(() =>
      recordActivity(this.deps.db, {
        serverId: this.serverId,
        event: 'server:sftp.rename',
        actor: this.actor,
        properties: { from, to, using_sftp: true },
        timestamp: this.deps.clock.now(),
      }),
    );
  }

  /** Writes what is pending (one entry per kind); resolves when every entry so far is written. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const timestamp = this.deps.clock.now();
    const entries = [...this.pending].map(([event, paths]) => ({
      serverId: this.serverId,
      event,
      actor: this.actor,
      properties: { files: [...paths], using_sftp: true },
      timestamp,
    }));
    this.pending.clear();
    return this.enqueue(() => recordActivities(this.deps.db, entries));
  }

  /** Entries are written one after another, in the order the operations ended; a failure is reported, never thrown at a client. */
  private enqueue(write: () => Promise<void>): Promise<void> {
    this.writing = this.writing.then(write).catch(this.deps.onError);
    return this.writing;
  }
}
