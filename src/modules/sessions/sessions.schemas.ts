import { Type } from '@sinclair/typebox';

/** `POST /auth/login`, Pterodactyl's body: `user` is a username or an email. */
export const SignInBody = Type.Object({
  user: Type.String({ maxLength: 255 }),
  password: Type.String(),
});

/** `POST /auth/login/checkpoint`, Pterodactyl's body: a TOTP code or a recovery token (checked by the service). */
export const CheckpointBody = Type.Object({
  confirmation_token: Type.Optional(Type.Unknown()),
  authentication_code: Type.Optional(Type.Unknown()),
  recovery_token: Type.Optional(Type.Unknown()),
});
