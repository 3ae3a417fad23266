import pg from 'pg';
import { sql } from 'kysely';
import type { DialectName, Queryable } from '../db/database.js';
import type { SchedulerLogger } from './logger.js';

/**
 * Cross-process wake-ups. On PostgreSQL a change to schedules (create, update,
 * execute, a run handed back at shutdown) is announced with NOTIFY; every
 * scheduler LISTENs and wakes at once. SQLite has no such channel: schedulers
 * there rely on their fallback poll (and on wake() within one process).
 *
 * The payload is the sender's schema, so that several deployments (or test
 * runs) sharing one PostgreSQL database do not wake one another.
 */
const SCHEDULES_CHANNEL = 'quetzal_schedules';

/**
 * Announces that schedules changed. Inside a transaction the notification is
 * delivered at commit (and dropped on rollback), which is exactly when others
 * should look.
 */
export async function notifySchedulesChanged(db: Queryable, dialect: DialectName): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`select pg_notify(${SCHEDULES_CHANNEL}, current_schema())`.execute(db);
}

/**
 * What AppDeps.onSchedulesChanged should be in a process: wake this process's
 * scheduler (if it runs one) and tell the other processes. Fire and forget; a
 * lost notification only costs the fallback poll's delay.
 */
export function schedulesChangedNotifier(
  deps: { db: Queryable; dialect: DialectName; logger?: SchedulerLogger | undefined },
  local?: { wake(): void } | undefined,
): () => void {
  return () => {
    local?.wake();
    notifySchedulesChanged(deps.db, deps.dialect).catch((err: unknown) =>
      deps.logger?.warn({ err }, 'could not notify other instances of a schedule change'),
    );
  };
}

/** A dedicated connection that LISTENs for schedule changes, reconnecting when it drops. */
export class ScheduleChangeListener {
  private client: pg.Client | undefined;
  private schema: string | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private retryDelay = 500;

  constructor(
    private readonly connectionString: string,
    private readonly onChange: () => void,
    private readonly logger?: SchedulerLogger,
  ) {}

  /** True while notifications can arrive (the scheduler polls more often otherwise). */
  get listening(): boolean {
    return this.client !== undefined;
  }

  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('error', (err) => {
      this.logger?.warn({ err }, 'schedule change listener lost its connection');
      this.dropped(client);
    });
    client.on('end', () => this.dropped(client));
    client.on('notification', (message) => {
      if (message.channel === SCHEDULES_CHANNEL && (message.payload ?? '') === this.schema) this.onChange();
    });
    try {
      await client.connect();
      const { rows } = await client.query<{ schema: string }>('select current_schema() as schema');
      this.schema = rows[0]?.schema ?? '';
      await client.query(`LISTEN ${SCHEDULES_CHANNEL}`);
    } catch (err) {
      this.logger?.warn({ err }, 'schedule change listener could not connect; retrying');
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      this.scheduleRetry();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.retryDelay = 500;
    // Anything announced while we were not listening is found by looking now.
    this.onChange();
  }

  private dropped(client: pg.Client) {
    if (this.client !== client) return;
    this.client = undefined;
    client.removeAllListeners('end');
    client.end().catch(() => undefined);
    this.scheduleRetry();
  }

  private scheduleRetry() {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect();
    }, this.retryDelay);
    this.retry.unref();
    this.retryDelay = Math.min(this.retryDelay * 2, 10_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
