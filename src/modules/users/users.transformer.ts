import { createHash } from 'node:crypto';
import type { UserRow } from '../../db/schema.js';
import { isoDate } from '../../http/dates.js';

/** The `user` object as Pterodactyl's clients read it (e.g. an activity entry's actor). */
export function userAttributes(user: UserRow) {
  return {
    uuid: user.uuid,
    username: user.username,
    email: user.email,
    image: `https://gravatar.com/avatar/${createHash('md5').update(user.email.toLowerCase()).digest('hex')}`,
    '2fa_enabled': user.use_totp === 1,
    created_at: isoDate(user.created_at),
  };
}
