import { Type, type Static } from '@sinclair/typebox';

/** Pterodactyl's notes rule (nullable, at most 256 characters). Absent, null or empty clears them (docs/reference/api.md#wire-conventions). */
export const UpdateAllocationBody = Type.Object({
  notes: Type.Optional(Type.String({ maxLength: 256 })),
});

export type UpdateAllocationInput = Static<typeof UpdateAllocationBody>;
