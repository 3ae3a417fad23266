import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteConnection, sqliteDriverName, type SqliteConnection } from '../../src/db/sqlite-driver.js';

/**
 * What Kysely and the statement cache rely on, checked on the driver this Node
 * uses (better-sqlite3 on Node 20, node:sqlite on 22.16+ and 24: .ci/run runs
 * both), so the two behave alike.
 */
describe(`the SQLite driver (${sqliteDriverName()} on Node ${process.version})`, () => {
  let dir: string;
  let db: SqliteConnection;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-driver-'));
    db = openSqliteConnection(path.join(dir, 'db.sqlite'));
    db.exec('create table t (id integer primary key, name text not null, n integer)');
  });
  afterEach(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is node:sqlite wherever Node has setReturnArrays, and better-sqlite3 only where it does not', () => {
    const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
    const hasIt = major > 22 || (major === 22 && minor >= 16);
    if (!process.env.QUETZAL_SQLITE_DRIVER) expect(sqliteDriverName()).toBe(hasIt ? 'node:sqlite' : 'better-sqlite3');
  });

  it('binds positional parameters given as one array, and reports changes and the new row id', () => {
    const insert = db.prepare('insert into t (name, n) values (?, ?)');
    expect(insert.reader).toBe(false);
    expect(insert.run(['a', 1])).toMatchObject({ changes: 1, lastInsertRowid: 1 });
    expect(insert.run(['b', null])).toMatchObject({ changes: 1, lastInsertRowid: 2 });
    const select = db.prepare('select id, name, n from t where id >= ? order by id');
    expect(select.reader).toBe(true);
    expect(select.all([1]).map((row) => ({ ...(row as object) }))).toEqual([
      { id: 1, name: 'a', n: 1 },
      { id: 2, name: 'b', n: null },
    ]);
    expect({ ...(select.get([2]) as object) }).toEqual({ id: 2, name: 'b', n: null });
  });

  it('returns rows as arrays in select order when asked, and counts RETURNING as a reader', () => {
    db.prepare('insert into t (name, n) values (?, ?)').run(['a', 7]);
    expect(db.prepare('select n, name from t', { arrays: true }).all([])).toEqual([[7, 'a']]);
    const returning = db.prepare('insert into t (name) values (?) returning id', { arrays: true });
    expect(returning.reader).toBe(true);
    expect(returning.all(['b'])).toEqual([[2]]);
  });

  it('is busy while an iteration is open, and free again when it ends early', () => {
    const insert = db.prepare('insert into t (name) values (?)');
    for (const name of ['a', 'b', 'c']) insert.run([name]);
    const select = db.prepare('select name from t order by id', { arrays: true });
    const seen: unknown[] = [];
    for (const row of select.iterate([])) {
      expect(select.busy).toBe(true);
      seen.push(row);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual([['a'], ['b']]);
    expect(select.busy).toBe(false);
    expect(select.all([])).toHaveLength(3);
  });

  it('raises SQLite errors as exceptions', () => {
    expect(() => db.prepare('insert into t (name) values (?)').run([null])).toThrow(/NOT NULL/);
    expect(() => db.prepare('select x from nowhere')).toThrow(/no such table/);
  });
});
