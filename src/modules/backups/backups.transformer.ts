import type { BackupRow } from '../../db/schema.js';
import { isoDate } from '../../http/dates.js';
import { item } from '../../http/envelopes.js';

function ignoredFilesOf(row: BackupRow): string[] {
  try {
    const parsed: unknown = JSON.parse(row.ignored_files);
    return Array.isArray(parsed) ? parsed.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}

/** The attributes of Pterodactyl's BackupTransformer (docs/reference/servers.md#the-server-routes); also what the CLI prints. */
export function backupAttributes(row: BackupRow) {
  return {
    uuid: row.uuid,
    is_successful: row.is_successful === 1,
    is_locked: row.is_locked === 1,
    name: row.name,
    ignored_files: ignoredFilesOf(row),
    checksum: row.checksum,
    bytes: Number(row.bytes),
    created_at: isoDate(row.created_at),
    completed_at: isoDate(row.completed_at),
  };
}

export function backupItem(row: BackupRow) {
  return item('backup', backupAttributes(row));
}
