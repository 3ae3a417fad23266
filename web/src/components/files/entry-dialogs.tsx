import { useChmodFiles, useCreateFolder, useDeleteFiles, useRenameFiles, type FileObject } from '../../api/files';
import { destinationOf, joinPath } from '../../lib/file-paths';
import { useServer } from '../../lib/server-context';
import { ChmodDialog, NameDialog } from '../file-dialogs';
import { ConfirmDialog } from '../ui';

/**
 * The Files section's questions about a folder and its selected entries (docs/reference/files-and-sftp.md):
 * a new folder, rename or move one entry, move several, their permissions,
 * and their deletion. Each sends its own request and keeps the API's refusal
 * inside itself; cancelling forgets it, so the next opening starts clean.
 */

export type EntryDialog = 'folder' | 'rename' | 'chmod' | 'delete' | null;

interface EntryDialogsProps {
  open: EntryDialog;
  directory: string;
  /** The selected entries of `directory`, in the list's order. */
  chosen: readonly FileObject[];
  /** After a change: what to say, and whether the selection still names what is there. */
  onDone(message: string, keepSelection?: boolean): void;
  onClose(): void;
}

export function EntryDialogs({ open, directory, chosen, onDone, onClose }: EntryDialogsProps) {
  const { id } = useServer();
  const createFolder = useCreateFolder(id);
  const rename = useRenameFiles(id);
  const chmod = useChmodFiles(id);
  const remove = useDeleteFiles(id);
  const names = chosen.map((entry) => entry.name);
  const one = chosen.length === 1 ? chosen[0]! : null;
  const cancel = (mutation: { reset(): void }) => () => {
    mutation.reset();
    onClose();
  };

  return (
    <>
      <NameDialog
        open={open === 'folder'}
        title="New folder"
        label="Folder name"
        confirmLabel="Create folder"
        initial=""
        busy={createFolder.isPending}
        error={createFolder.error}
        onConfirm={(name) => createFolder.mutate({ directory, name }, { onSuccess: () => onDone(`Created “${name}”.`) })}
        onCancel={cancel(createFolder)}
      />
      <NameDialog
        open={open === 'rename' && one !== null}
        title={`Rename or move “${one?.name ?? ''}”`}
        label="New name or path"
        confirmLabel="Rename"
        initial={one?.name ?? ''}
        hint="A name renames it here; a path such as ../backups/name or /plugins/name moves it."
        busy={rename.isPending}
        error={rename.error}
        onConfirm={(answer) => {
          if (!one) return;
          const to = destinationOf(directory, answer);
          rename.mutate([{ from: joinPath(directory, one.name), to }], {
            onSuccess: () => onDone(`Moved “${one.name}” to ${to}.`),
          });
        }}
        onCancel={cancel(rename)}
      />
      <NameDialog
        open={open === 'rename' && chosen.length > 1}
        title={`Move ${chosen.length} entries`}
        label="Destination folder"
        confirmLabel="Move"
        initial={directory}
        hint="A folder path from the root (/plugins) or from here (../backups). It must exist."
        busy={rename.isPending}
        error={rename.error}
        onConfirm={(answer) => {
          const folder = destinationOf(directory, answer);
          const moves = names.map((name) => ({ from: joinPath(directory, name), to: joinPath(folder, name) }));
          rename.mutate(moves, { onSuccess: () => onDone(`Moved ${moves.length} entries to ${folder}.`) });
        }}
        onCancel={cancel(rename)}
      />
      <ChmodDialog
        open={open === 'chmod'}
        names={names}
        initial={chosen[0]?.mode_bits.slice(-3).padStart(3, '0') ?? '644'}
        busy={chmod.isPending}
        error={chmod.error}
        onConfirm={(mode) =>
          chmod.mutate({ directory, names, mode }, { onSuccess: () => onDone(`Permissions set to ${mode}.`, true) })
        }
        onCancel={cancel(chmod)}
      />
      <ConfirmDialog
        open={open === 'delete'}
        title={names.length === 1 ? `Delete “${names[0]}”?` : `Delete ${names.length} entries?`}
        confirmLabel="Delete"
        danger
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() =>
          remove.mutate(
            { directory, names },
            { onSuccess: () => onDone(`Deleted ${names.length === 1 ? `“${names[0]}”` : `${names.length} entries`}.`) },
          )
        }
        onCancel={cancel(remove)}
      >
        <p>
          {chosen.some((entry) => !entry.is_file) ? 'Folders are deleted with everything in them. ' : ''}This cannot be undone.
        </p>
        {names.length > 1 && (
          <ul class="small mono">
            {names.slice(0, 10).map((name) => (
              <li key={name}>{name}</li>
            ))}
            {names.length > 10 && <li>and {names.length - 10} more</li>}
          </ul>
        )}
      </ConfirmDialog>
    </>
  );
}
