import path from 'node:path';
import pg from 'pg';
import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteDialect,
  type QueryResult,
  type RawBuilder,
  type SqliteDatabase,
  type Transaction,
} from 'kysely';
import { preparePrivateFile, tightenPrivateFileIfPresent, type ModeChange } from '../private-files.js';
import type { Tables } from './schema.js';
import { openSqliteConnection, type SqliteConnection, type SqliteStatement } from './sqlite-driver.js';

export type Database = Kysely<Tables>;
export type Trx = Transaction<Tables>;
/** Anything a query can run on: the database itself or an open transaction. */
export type Queryable = Kysely<Tables>;
export type DialectName = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Database;
  dialect: DialectName;
  /** The PostgreSQL schema this handle works in, when not the default. */
  schema?: string;
  /** The SQLite database file (absent for PostgreSQL and `:memory:`). */
  file?: string;
  /** Files whose modes opening the database tightened to 0600 (SQLite; docs/reference/containment.md), for the caller to log. */
  modeChanges?: readonly ModeChange[];
  close(): Promise<void>;
}

/**
 * A hot-path statement compiled once per database (or transaction) object and
 * then run with fresh parameters, skipping Kysely's per-call query building.
 * `build` receives placeholder values and must use each parameter exactly once,
 * in the order the parameters are later given.
 */
export function precompiled<R>(build: (...placeholders: unknown[]) => RawBuilder<R>, arity: number) {
  const texts = new WeakMap<Queryable, string>();
  return (db: Queryable, params: readonly unknown[]): Promise<QueryResult<R>> => {
    let text = texts.get(db);
    if (text === undefined) {
      const compiled = build(...Array.from({ length: arity }, () => null)).compile(db);
      if (compiled.parameters.length !== arity) throw new Error('precompiled: each parameter must appear exactly once');
      text = compiled.sql;
      texts.set(db, text);
    }
    return db.executeQuery(CompiledQuery.raw(text, params as unknown[])) as Promise<QueryResult<R>>;
  };
}

const PG_INT8 = 20;
const PG_NUMERIC = 1700;

/** Opens the database named by a `sqlite:<path>` or `postgres://` URL. */
export function openDatabase(url: string, opts: { poolSize?: number; searchPath?: string } = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length));
  if (/^postgres(ql)?:\/\//.test(url)) return openPostgres(url, opts.poolSize ?? 10, opts.searchPath);
  throw new Error('DATABASE_URL must start with sqlite: or postgres://');
}

function openSqlite(file: string): DatabaseHandle {
  const modeChanges = file === ':memory:' ? [] : preparePrivateSqliteFiles(path.resolve(file));
  const sqlite = openSqliteConnection(file);
  sqlite.exec('PRAGMA busy_timeout = 10000');
  sqlite.exec('PRAGMA journal_mode = WAL');
  sqlite.exec('PRAGMA synchronous = NORMAL');
  sqlite.exec('PRAGMA foreign_keys = ON');
  const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  return {
    db,
    dialect: 'sqlite',
    ...(file !== ':memory:' ? { file: path.resolve(file), modeChanges } : {}),
    close: () => db.destroy(),
  };
}

/** The migrations' lock (src/db/migrate.ts): a small SQLite database beside the main file. */
export function migrateLockFile(file: string): string {
  return `${file}.migrate-lock`;
}

const SQLITE_SIDE_SUFFIXES = ['-wal', '-shm', '-journal'];

/**
 * The database file 0600 before SQLite opens it (created so when missing):
 * SQLite then creates its journal, `-wal` and `-shm` with the same mode. Side
 * files an earlier version (or a looser umask) left readable are tightened too.
 */
function preparePrivateSqliteFiles(file: string): ModeChange[] {
  const lock = migrateLockFile(file);
  const sideFiles = [file, lock].flatMap((main) => SQLITE_SIDE_SUFFIXES.map((suffix) => `${main}${suffix}`));
  return [...preparePrivateFile(file), ...[lock, ...sideFiles].flatMap(tightenPrivateFileIfPresent)];
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * A statement whose SQL starts with this comment returns its rows from SQLite
 * as arrays of column values, in select order (PostgreSQL ignores it and
 * returns objects): better-sqlite3 builds a row object key by key, which took
 * as long as running a 25-row page query (docs/PERFORMANCE.md).
 */
export const ARRAY_ROWS = '/* array rows */ ';

function prepareStatement(sqlite: SqliteConnection, sql: string): SqliteStatement {
  return sqlite.prepare(sql, { arrays: sql.startsWith(ARRAY_ROWS) });
}

/**
 * Kysely prepares every statement anew; preparing was 15% of a request's time
 * (docs/PERFORMANCE.md). The service issues a few hundred distinct statements,
 * so prepared ones are kept by their SQL text (the cache is cleared if it ever
 * fills, e.g. with statements whose IN lists vary in length). Reusing a
 * statement is safe here: the driver runs each call to completion
 * synchronously, and one that is busy being iterated is never handed out.
 */
function withStatementCache(sqlite: SqliteConnection): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = statements.get(sql);
      // A statement being iterated cannot run again until it is done: prepare another.
      if (statement?.busy) return prepareStatement(sqlite, sql);
      if (!statement) {
        statement = prepareStatement(sqlite, sql);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

function openPostgres(url: string, max: number, searchPath?: string): DatabaseHandle {
  // Millisecond timestamps and counters are int8: read them as numbers, not strings.
  const types = {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === PG_INT8 || oid === PG_NUMERIC) return (value: string) => Number(value);
      return pg.types.getTypeParser(oid, format);
    },
  };
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types: types as pg.CustomTypesConfig,
    // Tests isolate themselves in a schema of their own.
    ...(searchPath ? { options: `-c search_path=${searchPath}` } : {}),
  });
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
  // A schema named in the URL (`?options=-c search_path=X`) is the schema too: Kysely's migrator must look only there.
  const schema =
    searchPath ??
    /(?:^|\s)search_path=([A-Za-z_][A-Za-z0-9_]*)(?:\s|$)/.exec(new URL(url).searchParams.get('options') ?? '')?.[1];
  return { db, dialect: 'postgres', ...(schema ? { schema } : {}), close: () => db.destroy() };
}
