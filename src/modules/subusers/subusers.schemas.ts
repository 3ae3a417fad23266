import { Type, type Static } from '@sinclair/typebox';

/** Pterodactyl's StoreSubuserRequest: `email` (required, an address of at most 191 characters), `permissions` (required array of strings). */
export const CreateSubuserBody = Type.Object({
  email: Type.String({ maxLength: 191 }),
  permissions: Type.Array(Type.String()),
});

/** Pterodactyl's UpdateSubuserRequest: `permissions` (required array of strings). */
export const UpdateSubuserBody = Type.Object({
  permissions: Type.Array(Type.String()),
});

export type CreateSubuserInput = Static<typeof CreateSubuserBody>;
export type UpdateSubuserInput = Static<typeof UpdateSubuserBody>;

/** `/users/{user}`: the subuser's user UUID (the guard has resolved `server`). */
export const SubuserParams = Type.Object({ server: Type.String(), user: Type.String() });
