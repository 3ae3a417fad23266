/**
 * `GET /backups/{backup}/download` (docs/reference/files-and-sftp.md): a signed URL for the archive
 * of a backup that completed. A backup still being written, or one that
 * failed, has no archive to give: a 400, as Pterodactyl refuses it.
 */
import type { Actor } from '../../actor.js';
import type { BackupRow, ServerRow, UserRow } from '../../db/schema.js';
import type { AppDeps } from '../../deps.js';
import { badRequest } from '../../http/errors.js';
import { recordActivity } from '../activity/activity.recorder.js';
import { signedUrl, signedUrlKey } from '../files/files.signed-urls.js';

export async function backupDownloadUrl(
  deps: Pick<AppDeps, 'db' | 'clock' | 'config'> & { appKey: Buffer },
  server: ServerRow,
  backup: BackupRow,
  user: UserRow,
  actor: Actor,
): Promise<string> {
  if (backup.is_successful !== 1) {
    throw badRequest('This backup has not completed successfully and cannot be downloaded.');
  }
  const url = await signedUrl(
    signedUrlKey(deps.appKey),
    { purpose: 'backup-download', serverUuid: server.uuid, userUuid: user.uuid, backupUuid: backup.uuid },
    { appUrl: deps.config.appUrl, now: deps.clock.now() },
  );
  await recordActivity(deps.db, {
    serverId: server.id,
    event: 'server:backup.download',
    actor,
    properties: { name: backup.name },
    timestamp: deps.clock.now(),
  });
  return url;
}
