import type { Queryable } from '../../db/database.js';

/** Up to `limit` servers set to run on the image (servers.image = name, running or not), oldest first: what image:remove refuses over. */
export async function findServersOnImage(db: Queryable, name: string, limit: number): Promise<{ uuid: string }[]> {
  return db.selectFrom('servers').select(['uuid']).where('image', '=', name).orderBy('id').limit(limit).execute();
}
