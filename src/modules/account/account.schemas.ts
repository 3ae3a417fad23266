import { Type } from '@sinclair/typebox';

/**
 * Bodies of the account routes. The password members are only typed here: as
 * in Pterodactyl, the current password is checked (400) before the new one's
 * rules (422), which the service applies.
 */
export const UpdatePasswordBody = Type.Object({
  current_password: Type.Optional(Type.String()),
  password: Type.Optional(Type.String()),
  password_confirmation: Type.Optional(Type.String()),
});

/** `allowed_ips` is checked by the service, for Laravel's messages (`array`, `max`, and each entry's `allowed_ips.N`). */
export const StoreApiKeyBody = Type.Object({
  description: Type.String({ maxLength: 500 }),
  allowed_ips: Type.Optional(Type.Unknown()),
});

export const ApiKeyParams = Type.Object({ identifier: Type.String() });
