/**
 * The file routes' bodies and query strings, with Pterodactyl's rules
 * (its Files\*Request classes). Paths are strings without NUL; what they may
 * name (nothing outside the volume) is the daemon's check.
 */
import { Type, type Static } from '@sinclair/typebox';
import { LOOSE_BOOLEANS } from '../../http/validation.js';

const MAX_PATH = 4096;
/** More names than any real selection; keeps one request's work bounded. */
const MAX_FILES = 1000;

const VolumePath = (description: string) =>
  Type.String({ maxLength: MAX_PATH, pattern: '^[^\\u0000]*$', 'x-rule': 'no_nul', description });

const LooseBoolean = Type.Unsafe<boolean | number | string>({
  enum: [...LOOSE_BOOLEANS],
  'x-rule': 'boolean',
  description: 'true/false, 1/0, "1"/"0", "true"/"false"',
});

export const DirectoryQuery = Type.Object({
  directory: Type.Optional(VolumePath('folder to list, relative to the volume (default /)')),
});

export const FileQuery = Type.Object({
  file: VolumePath('file, relative to the volume'),
});

export const UploadQuery = Type.Object({
  directory: Type.Optional(VolumePath('folder to upload into (default /)')),
  token: Type.Optional(Type.String()),
});

export const TokenQuery = Type.Object({
  token: Type.Optional(Type.String()),
});

export const RenameBody = Type.Object({
  root: Type.Optional(VolumePath('folder the names are in (default /)')),
  files: Type.Array(Type.Object({ from: VolumePath('current name'), to: VolumePath('new name') }), {
    minItems: 1,
    maxItems: MAX_FILES,
  }),
});

export const CopyBody = Type.Object({
  location: VolumePath('file to copy beside itself'),
});

export const FilesInRootBody = Type.Object({
  root: Type.Optional(VolumePath('folder the names are in (default /)')),
  files: Type.Array(VolumePath('a name in root'), { minItems: 1, maxItems: MAX_FILES }),
});

export const DecompressBody = Type.Object({
  root: Type.Optional(VolumePath('folder the archive is in and unpacks into (default /)')),
  file: VolumePath('archive name in root'),
});

export const CreateFolderBody = Type.Object({
  root: Type.Optional(VolumePath('parent folder (default /)')),
  name: VolumePath('folder name (may hold slashes: missing parents are made)'),
});

/** Pterodactyl's `numeric` mode: `"755"` or 755, read as octal digits. */
export const ChmodBody = Type.Object({
  root: Type.Optional(VolumePath('folder the names are in (default /)')),
  files: Type.Array(
    Type.Object({
      file: VolumePath('a name in root'),
      mode: Type.Union([Type.String({ maxLength: 8 }), Type.Integer({ minimum: 0, maximum: 99_999_999 })], {
        'x-rule': 'numeric',
        description: 'octal permission digits, e.g. "644"; no setuid, setgid or sticky bit',
      }),
    }),
    { minItems: 1, maxItems: MAX_FILES },
  ),
});

export const PullBody = Type.Object({
  url: Type.String({ maxLength: 2048, description: 'http(s) URL to fetch' }),
  directory: Type.Optional(VolumePath('folder to save into (default /)')),
  filename: Type.Optional(VolumePath('name to save as (default: from the URL, or its Content-Disposition with use_header)')),
  use_header: Type.Optional(LooseBoolean),
  foreground: Type.Optional(LooseBoolean),
});

export type RenameInput = Static<typeof RenameBody>;
export type ChmodInput = Static<typeof ChmodBody>;
export type PullInput = Static<typeof PullBody>;
