import { Type } from '@sinclair/typebox';

/** `POST /auth/login`, Pterodactyl's body: `user` is a username or an email. */
export const SignInBody = Type.Object({
  user: Type.String({ maxLength: 255 }),
  password: Type.String(),
});
