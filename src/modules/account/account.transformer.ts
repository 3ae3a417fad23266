import type { ApiKeyRow, UserRow } from '../../db/schema.js';
import { isoDate } from '../../http/dates.js';
import { item } from '../../http/envelopes.js';

/**
 * The signed-in user as Pterodactyl's AccountTransformer shows them (object
 * `user`). Quetzal keeps no names or language: `first_name` and `last_name`
 * are empty strings and `language` is `en`.
 */
export function accountAttributes(user: UserRow) {
  return {
    id: user.id,
    admin: user.root_admin === 1,
    username: user.username,
    email: user.email,
    first_name: '',
    last_name: '',
    language: 'en',
  };
}

export const accountItem = (user: UserRow) => item('user', accountAttributes(user));

/** A client API key as Pterodactyl's ApiKeyTransformer shows it (object `api_key`); never its secret. */
export function apiKeyItem(key: ApiKeyRow) {
  return item('api_key', {
    identifier: key.identifier,
    description: key.description,
    allowed_ips: JSON.parse(key.allowed_ips) as string[],
    last_used_at: isoDate(key.last_used_at),
    created_at: isoDate(key.created_at),
  });
}

/** An SSH key as Pterodactyl's UserSSHKeyTransformer shows it (object `ssh_key`). */
export function sshKeyItem(key: { name: string; fingerprint: string; public_key: string; created_at: number }) {
  return item('ssh_key', {
    name: key.name,
    fingerprint: key.fingerprint,
    public_key: key.public_key,
    created_at: isoDate(key.created_at),
  });
}
