import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * The one place that knows which SQLite library Quetzal runs on
 * (docs/DECISIONS.md, "The SQLite driver"): Node's built-in `node:sqlite` where
 * it has everything we use (Node 22.16+, 24 LTS: no native build at all), and
 * better-sqlite3 only where it does not (Node 20). better-sqlite3 12 aborts the
 * process on Node 24.19+ when a statement is garbage-collected outside a
 * JavaScript context, and 13 does not build on Node 20, so neither version of
 * it can serve every supported Node.
 */
export type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';

export interface SqliteRunResult {
  changes: number | bigint;
  lastInsertRowid: number | bigint;
}

/** A prepared statement; parameters are positional, given as one array (Kysely's shape). */
export interface SqliteStatement {
  /** Whether it returns rows (a SELECT, a PRAGMA with a result, a RETURNING clause). */
  readonly reader: boolean;
  /** Being iterated: it cannot run again until the iteration ends. */
  readonly busy: boolean;
  all(parameters: readonly unknown[]): unknown[];
  get(parameters: readonly unknown[]): unknown;
  run(parameters: readonly unknown[]): SqliteRunResult;
  iterate(parameters: readonly unknown[]): IterableIterator<unknown>;
}

export interface SqliteConnection {
  readonly driver: SqliteDriverName;
  /** `arrays`: a reader returns each row as an array of column values, in select order. */
  prepare(sql: string, options?: { arrays?: boolean }): SqliteStatement;
  exec(sql: string): void;
  close(): void;
}

// Loaded on demand, so that a Node with node:sqlite never loads better-sqlite3's native addon.
const requireModule = createRequire(import.meta.url);

/**
 * Opens a SQLite file (or `:memory:`) with the driver this Node.js supports.
 * QUETZAL_SQLITE_DRIVER=node:sqlite|better-sqlite3 forces one, for measuring
 * one against the other on the same Node (docs/PERFORMANCE.md).
 */
export function openSqliteConnection(file: string, options: { readonly?: boolean } = {}): SqliteConnection {
  const driver = sqliteDriverName();
  return driver === 'node:sqlite' ? openWithNodeSqlite(file, options) : openWithBetterSqlite3(file, options);
}

let chosen: SqliteDriverName | undefined;

/** The driver openSqliteConnection uses in this process. */
export function sqliteDriverName(): SqliteDriverName {
  if (chosen) return chosen;
  const forced = process.env.QUETZAL_SQLITE_DRIVER?.trim();
  if (forced) {
    if (forced !== 'node:sqlite' && forced !== 'better-sqlite3')
      throw new Error('QUETZAL_SQLITE_DRIVER must be node:sqlite or better-sqlite3');
    if (forced === 'node:sqlite' && !nodeSqlite())
      throw new Error(`QUETZAL_SQLITE_DRIVER=node:sqlite: this Node.js (${process.version}) has no usable node:sqlite`);
    chosen = forced;
  } else chosen = nodeSqlite() ? 'node:sqlite' : 'better-sqlite3';
  return chosen;
}

// ------------------------------------------------------------------ node:sqlite

/** The part of `node:sqlite` we use (the project's @types/node is Node 20's, which has none of it). */
interface NodeSqliteModule {
  DatabaseSync: new (file: string, options?: { readOnly?: boolean; timeout?: number }) => NodeSqliteDatabase;
  StatementSync: { prototype: object };
}
interface NodeSqliteDatabase {
  prepare(sql: string): NodeSqliteStatement;
  exec(sql: string): void;
  close(): void;
}
interface NodeSqliteStatement {
  all(...parameters: unknown[]): unknown[];
  get(...parameters: unknown[]): unknown;
  run(...parameters: unknown[]): SqliteRunResult;
  iterate(...parameters: unknown[]): IterableIterator<unknown>;
  columns(): unknown[];
  setReturnArrays(enabled: boolean): void;
}

let nodeSqliteModule: NodeSqliteModule | null | undefined;

/**
 * `node:sqlite`, if this Node has it unflagged and with rows as arrays and
 * column lists (Node 22.16+, 23.11+, 24); otherwise null. Node 22 prints an
 * ExperimentalWarning when the module is first loaded: that one warning, and
 * only it, is not printed (every log line would otherwise start with it).
 */
function nodeSqlite(): NodeSqliteModule | null {
  if (nodeSqliteModule !== undefined) return nodeSqliteModule;
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    const message = typeof warning === 'string' ? warning : warning.message;
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    if (type === 'ExperimentalWarning' && message.startsWith('SQLite is an experimental feature')) return;
    return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    const loaded = requireModule('node:sqlite') as NodeSqliteModule;
    const proto = loaded.StatementSync.prototype as Partial<NodeSqliteStatement>;
    nodeSqliteModule = typeof proto.setReturnArrays === 'function' && typeof proto.columns === 'function' ? loaded : null;
  } catch {
    // Node 20, or 22 before 22.13 (behind --experimental-sqlite).
    nodeSqliteModule = null;
  } finally {
    process.emitWarning = emitWarning;
  }
  return nodeSqliteModule;
}

function openWithNodeSqlite(file: string, options: { readonly?: boolean }): SqliteConnection {
  const { DatabaseSync } = nodeSqlite()!;
  // better-sqlite3 waits 5 s for another connection's lock by default, node:sqlite not at
  // all: the same wait for both (the first statements, before any busy_timeout pragma,
  // may meet another process migrating the same file).
  const database = new DatabaseSync(file, { readOnly: options.readonly ?? false, timeout: 5000 });
  return {
    driver: 'node:sqlite',
    prepare(sql, prepareOptions) {
      const statement = database.prepare(sql);
      const reader = statement.columns().length > 0;
      if (reader && prepareOptions?.arrays) statement.setReturnArrays(true);
      return new NodeSqliteStatementAdapter(statement, reader);
    },
    exec: (sql) => database.exec(sql),
    close: () => database.close(),
  };
}

/**
 * node:sqlite takes parameters as separate arguments and has no `busy` flag:
 * running a statement while an iteration of it is open would reset that
 * iteration, so the adapter tracks it for the statement cache.
 */
class NodeSqliteStatementAdapter implements SqliteStatement {
  busy = false;
  constructor(
    private readonly statement: NodeSqliteStatement,
    readonly reader: boolean,
  ) {}

  all(parameters: readonly unknown[]) {
    return this.statement.all(...parameters);
  }

  get(parameters: readonly unknown[]) {
    return this.statement.get(...parameters);
  }

  run(parameters: readonly unknown[]) {
    return this.statement.run(...parameters);
  }

  *iterate(parameters: readonly unknown[]) {
    this.busy = true;
    try {
      yield* this.statement.iterate(...parameters);
    } finally {
      this.busy = false;
    }
  }
}

// ------------------------------------------------------------------ better-sqlite3

function openWithBetterSqlite3(file: string, options: { readonly?: boolean }): SqliteConnection {
  let Database: typeof BetterSqlite3;
  try {
    Database = requireModule('better-sqlite3') as typeof BetterSqlite3;
  } catch (err) {
    throw new Error(
      `this Node.js (${process.version}) has no usable node:sqlite and better-sqlite3 could not be loaded ` +
        `(reinstall with npm ci, which builds it): ${(err as Error).message}`,
      { cause: err },
    );
  }
  const database = new Database(file, { readonly: options.readonly ?? false });
  return {
    driver: 'better-sqlite3',
    prepare(sql, prepareOptions) {
      const statement = database.prepare(sql);
      if (statement.reader && prepareOptions?.arrays) statement.raw(true);
      return {
        get reader() {
          return statement.reader;
        },
        get busy() {
          return statement.busy;
        },
        all: (parameters) => statement.all(parameters),
        get: (parameters) => statement.get(parameters),
        run: (parameters) => statement.run(parameters),
        iterate: (parameters) => statement.iterate(parameters),
      };
    },
    exec: (sql) => void database.exec(sql),
    close: () => void database.close(),
  };
}
