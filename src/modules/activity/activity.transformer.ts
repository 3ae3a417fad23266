import { isoDate } from '../../http/dates.js';
import { item } from '../../http/envelopes.js';
import { userAttributes } from '../users/users.transformer.js';
import type { ActivityListRow, ActivityViewer } from './activity.types.js';

/** The properties each event is written with (docs/reference/activity.md#entries); any other key is "additional metadata". */
const LISTED_PROPERTIES: Record<string, readonly string[]> = {
  'server:schedule.create': ['name'],
  'server:schedule.update': ['name', 'active'],
  'server:schedule.delete': ['name'],
  'server:schedule.execute': ['name'],
  'server:task.create': ['name', 'action', 'payload'],
  'server:task.update': ['name', 'action', 'payload'],
  'server:task.delete': ['name'],
  'server:backup.start': ['name', 'locked'],
  'server:backup.delete': ['name', 'failed'],
  'server:backup.lock': ['name'],
  'server:backup.unlock': ['name'],
  'server:backup.complete': ['name'],
  'server:backup.fail': ['name'],
  'server:backup.restore': ['name', 'truncate'],
  'server:backup.restore-complete': ['name'],
  'server:backup.restore-failed': ['name'],
  'server:schedule.run': ['name'],
  // Quetzal's own (docs/DECISIONS.md): a run resumed or closed after its instance died.
  'server:schedule.resume': ['name'],
  'server:schedule.abandon': ['name'],
  // docs/reference/eggs-and-installs.md: POST /settings/reinstall and `server:reinstall` (Pterodactyl's name).
  'server:reinstall': [],
  'server:power.start': [],
  'server:power.stop': [],
  'server:power.restart': [],
  'server:power.kill': [],
  'server:console.command': ['command'],
  'server:file.delete': ['directory', 'files'],
  // docs/reference/files-and-sftp.md: the file routes (src/modules/files), Pterodactyl's names and properties.
  'server:file.read': ['file'],
  'server:file.download': ['file'],
  'server:file.write': ['file'],
  'server:file.rename': ['directory', 'files'],
  'server:file.copy': ['file'],
  'server:file.compress': ['directory', 'files', 'archive'],
  'server:file.decompress': ['directory', 'files'],
  'server:file.create-directory': ['directory', 'name'],
  'server:file.chmod': ['directory', 'files'],
  'server:file.pull': ['directory', 'url', 'file'],
  'server:file.pull.fail': ['directory', 'url', 'error'],
  'server:file.uploaded': ['directory', 'file'],
  'server:backup.download': ['name'],
  // docs/reference/containment.md: the kernel killed the server's process for using more memory than its limit.
  'server:process.oom': [],
  // docs/reference/network-and-allocations.md, as Pterodactyl's activity translations name them.
  'server:allocation.create': ['allocation'],
  'server:allocation.notes': ['allocation', 'old', 'new'],
  'server:allocation.primary': ['allocation'],
  'server:allocation.delete': ['allocation'],
  // docs/reference/containment.md: the daemon stopped the server for passing its disk or inode limit while running.
  'server:process.disk-limit': [],
  // docs/reference/files-and-sftp.md: SFTP sessions (Wings' sftp events; Pterodactyl adds using_sftp).
  'server:sftp.write': ['files'],
  'server:sftp.create': ['files'],
  'server:sftp.create-directory': ['files'],
  'server:sftp.delete': ['files'],
  'server:sftp.rename': ['from', 'to'],
  // docs/reference/eggs-and-installs.md: startup and settings (Pterodactyl's StartupController and SettingsController).
  'server:startup.edit': ['variable', 'old', 'new'],
  'server:startup.image': ['old', 'new'],
  'server:settings.rename': ['old', 'new'],
  'server:settings.description': ['old', 'new'],
};
const NEVER_ADDITIONAL = ['ip', 'useragent', 'using_sftp'];

function parseProperties(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    // Laravel stores an empty collection as []: it reads as {} (docs/reference/activity.md#entries).
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function hasAdditionalMetadata(event: string, properties: Record<string, unknown>): boolean {
  const listed = LISTED_PROPERTIES[event] ?? [];
  return Object.keys(properties).some((key) => !listed.includes(key) && !NEVER_ADDITIONAL.includes(key));
}

/** The IP rule of docs/reference/activity.md#entries: the entry's own actor, the server owner and root admins see it. */
export function viewerSeesIp(viewer: ActivityViewer, actorId: number | null): boolean {
  return viewer.seesAllIps || (actorId !== null && actorId === viewer.userId);
}

/** `activity_log`, with the actor both beside and inside the attributes (docs/reference/activity.md#entries). */
export function activityItem(row: ActivityListRow, viewer: ActivityViewer) {
  const seesIp = viewerSeesIp(viewer, row.actor_id);
  const properties = parseProperties(row.properties);
  const additional = hasAdditionalMetadata(row.event, properties);
  if (!seesIp && 'ip' in properties) properties.ip = '[hidden]';
  const actor =
    row.actor_id !== null && row.actor_uuid !== null
      ? item(
          'user',
          userAttributes({
            id: row.actor_id,
            uuid: row.actor_uuid,
            username: row.actor_username ?? '',
            email: row.actor_email ?? '',
            use_totp: row.actor_use_totp ?? 0,
            root_admin: 0,
            created_at: row.actor_created_at ?? 0,
          }),
        )
      : { object: 'null_resource', attributes: null };
  const relationships = { actor };
  return {
    object: 'activity_log',
    attributes: {
      id: String(row.id),
      batch: row.batch,
      event: row.event,
      is_api: row.api_key_id !== null,
      ip: seesIp ? row.ip : null,
      description: row.description,
      properties,
      has_additional_metadata: additional,
      timestamp: isoDate(row.timestamp),
      relationships,
    },
    relationships,
  };
}
