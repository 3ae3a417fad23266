import { createHash } from 'node:crypto';
import type { UserRow } from '../../db/schema.js';
import { isoDate } from '../../http/dates.js';

/**
 * Gravatar URLs by email. A page of activity names the same few actors over
 * and over; hashing each entry's email again was a measurable share of the
 * listing's time (docs/PERFORMANCE.md). Bounded: cleared when full.
 */
const avatars = new Map<string, string>();
const AVATAR_CACHE_SIZE = 10_000;

function avatarUrl(email: string): string {
  let url = avatars.get(email);
  if (url === undefined) {
    url = `https://gravatar.com/avatar/${createHash('md5').update(email.toLowerCase()).digest('hex')}`;
    if (avatars.size >= AVATAR_CACHE_SIZE) avatars.clear();
    avatars.set(email, url);
  }
  return url;
}

/** The `user` object as Pterodactyl's clients read it (e.g. an activity entry's actor). */
export function userAttributes(user: UserRow) {
  return {
    uuid: user.uuid,
    username: user.username,
    email: user.email,
    image: avatarUrl(user.email),
    '2fa_enabled': user.use_totp === 1,
    created_at: isoDate(user.created_at),
  };
}
