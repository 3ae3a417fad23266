import type { Queryable } from '../../db/database.js';

export interface SshKeyRow {
  id: number;
  name: string;
  fingerprint: string;
  public_key: string;
  created_at: number;
}

const COLUMNS = ['id', 'name', 'fingerprint', 'public_key', 'created_at'] as const;
const normalise = (r: SshKeyRow): SshKeyRow => ({ ...r, id: Number(r.id), created_at: Number(r.created_at) });

export async function listSshKeysOfUser(db: Queryable, userId: number): Promise<SshKeyRow[]> {
  const rows = await db.selectFrom('user_ssh_keys').select(COLUMNS).where('user_id', '=', userId).orderBy('id').execute();
  return rows.map(normalise);
}

export async function sshKeyExists(db: Queryable, userId: number, fingerprint: string): Promise<boolean> {
  const row = await db
    .selectFrom('user_ssh_keys')
    .select('id')
    .where('user_id', '=', userId)
    .where('fingerprint', '=', fingerprint)
    .executeTakeFirst();
  return row !== undefined;
}

/** Inserts a key; undefined when the user already has one with this fingerprint (the unique constraint decides). */
export async function insertSshKey(
  db: Queryable,
  row: { user_id: number; name: string; fingerprint: string; public_key: string; created_at: number },
): Promise<SshKeyRow | undefined> {
  const inserted = await db
    .insertInto('user_ssh_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'fingerprint']).doNothing())
    .returning(COLUMNS)
    .executeTakeFirst();
  return inserted && normalise(inserted);
}

/** Deletes the user's key with this fingerprint; the deleted row, if there was one. */
export async function deleteSshKey(db: Queryable, userId: number, fingerprint: string): Promise<SshKeyRow | undefined> {
  const row = await db
    .deleteFrom('user_ssh_keys')
    .where('user_id', '=', userId)
    .where('fingerprint', '=', fingerprint)
    .returning(COLUMNS)
    .executeTakeFirst();
  return row && normalise(row);
}
