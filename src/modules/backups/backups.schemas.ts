import { Type, type Static } from '@sinclair/typebox';
import { LOOSE_BOOLEANS } from '../../http/validation.js';

/** Laravel's `boolean` rule (docs/reference/api.md#wire-conventions). */
const LooseBoolean = Type.Unsafe<boolean | number | string>({
  enum: [...LOOSE_BOOLEANS],
  'x-rule': 'boolean',
  description: 'true/false, 1/0, "1"/"0", "true"/"false"',
});

/** Pterodactyl's StoreBackupRequest: every member optional. */
export const CreateBackupBody = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 191, description: 'default "Backup at <date time>"' })),
  ignored: Type.Optional(
    Type.String({ description: 'newline-separated patterns of files to leave out: at most 64 KiB (UTF-8) and 1,000 patterns' }),
  ),
  is_locked: Type.Optional(LooseBoolean),
});

/** docs/reference/backups-and-restores.md#restoring: the body is optional; `truncate` absent or null means false. */
export const RestoreBackupBody = Type.Object({
  truncate: Type.Optional(LooseBoolean),
});

export const BackupListQuery = Type.Object({
  page: Type.Optional(Type.String()),
  per_page: Type.Optional(Type.String()),
});

export type CreateBackupInput = Static<typeof CreateBackupBody>;
export type RestoreBackupInput = Static<typeof RestoreBackupBody>;
