import { createHash } from 'node:crypto';
import { isoDate } from '../../http/dates.js';
import { item, list } from '../../http/envelopes.js';
import { PERMISSION_GROUPS } from '../../http/permissions.js';
import type { SubuserListRow } from './subusers.repository.js';

/** Pterodactyl's avatar URL: gravatar of the lower-cased email's MD5. */
export function gravatarUrl(email: string): string {
  return `https://gravatar.com/avatar/${createHash('md5').update(email.toLowerCase()).digest('hex')}`;
}

/** The `server_subuser` object (Pterodactyl's SubuserTransformer: the user's fields and the permissions). */
export function subuserItem(row: SubuserListRow) {
  return item('server_subuser', {
    uuid: row.uuid,
    username: row.username,
    email: row.email,
    image: gravatarUrl(row.email),
    '2fa_enabled': row.use_totp === 1,
    created_at: isoDate(row.created_at),
    permissions: JSON.parse(row.permissions) as string[],
  });
}

export function subuserList(rows: readonly SubuserListRow[]) {
  return list(rows.map(subuserItem));
}

/** GET /api/client/permissions: Pterodactyl's `system_permissions` object. */
export function systemPermissions() {
  return { object: 'system_permissions', attributes: { permissions: PERMISSION_GROUPS } };
}
