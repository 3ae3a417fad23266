import { useCompressFiles, useCopyFile, useDecompressFile, useDownloadFile, type FileObject } from '../../api/files';
import { isArchive, joinPath } from '../../lib/file-paths';
import { useServer } from '../../lib/server-context';
import type { EntryDialog } from './entry-dialogs';

/**
 * The Files section's toolbar for the selected entries (docs/reference/files-and-sftp.md): copy,
 * download, compress and decompress at once, rename or move, permissions and
 * delete through their dialogs; each offered only with its permission.
 */

/** The toolbar's direct actions; download also opens a file the editor does not take. */
export function useSelectionActions(server: string) {
  const copy = useCopyFile(server);
  const compress = useCompressFiles(server);
  const decompress = useDecompressFile(server);
  const download = useDownloadFile(server);
  const all = [copy, compress, decompress, download];
  return {
    copy,
    compress,
    decompress,
    download,
    /** The error of the one that failed last, shown under the toolbar (the others were reset when it began). */
    error: all.find((action) => action.isError)?.error ?? null,
    working: compress.isPending || decompress.isPending,
    reset: () => {
      for (const action of all) action.reset();
    },
  };
}

export type SelectionActions = ReturnType<typeof useSelectionActions>;

interface SelectionToolbarProps {
  directory: string;
  /** The selected entries of `directory`, in the list's order. */
  chosen: readonly FileObject[];
  actions: SelectionActions;
  /** Before each direct action: the last one's message and error go. */
  onStart(): void;
  onDialog(dialog: EntryDialog): void;
  onDone(message: string, keepSelection?: boolean): void;
  onSelect(names: ReadonlySet<string>): void;
}

export function SelectionToolbar({ directory, chosen, actions, onStart, onDialog, onDone, onSelect }: SelectionToolbarProps) {
  const { permissions } = useServer();
  const can = (permission: string) => permissions.can(permission);
  const { copy, compress, decompress, download } = actions;
  const one = chosen.length === 1 ? chosen[0]! : null;
  const names = chosen.map((entry) => entry.name);
  return (
    <>
      <div class="file-toolbar" role="toolbar" aria-label="Selected entries">
        <span class="muted">{chosen.length > 0 ? `${chosen.length} selected` : 'Nothing selected'}</span>
        <button type="button" disabled={chosen.length === 0 || !can('file.update')} onClick={() => onDialog('rename')}>
          Rename or move
        </button>
        <button
          type="button"
          disabled={!one?.is_file || !can('file.create') || copy.isPending}
          onClick={() => {
            onStart();
            if (one) copy.mutate(joinPath(directory, one.name), { onSuccess: () => onDone(`Copied “${one.name}”.`) });
          }}
        >
          Copy
        </button>
        <button
          type="button"
          disabled={!one?.is_file || !can('file.read-content') || download.isPending}
          onClick={() => {
            onStart();
            if (one) download.mutate(joinPath(directory, one.name));
          }}
        >
          Download
        </button>
        <button type="button" disabled={chosen.length === 0 || !can('file.update')} onClick={() => onDialog('chmod')}>
          Permissions
        </button>
        <button
          type="button"
          disabled={chosen.length === 0 || !can('file.archive') || compress.isPending}
          onClick={() => {
            onStart();
            compress.mutate(
              { directory, names },
              {
                onSuccess: (archive) => {
                  onDone(`Created “${archive.name}”.`, true);
                  onSelect(new Set([archive.name]));
                },
              },
            );
          }}
        >
          Compress
        </button>
        <button
          type="button"
          disabled={!one?.is_file || !isArchive(one.name) || !can('file.archive') || decompress.isPending}
          onClick={() => {
            onStart();
            if (one) decompress.mutate({ directory, name: one.name }, { onSuccess: () => onDone(`Unpacked “${one.name}”.`) });
          }}
        >
          Decompress
        </button>
        <button
          type="button"
          class="danger"
          disabled={chosen.length === 0 || !can('file.delete')}
          onClick={() => onDialog('delete')}
        >
          Delete
        </button>
      </div>
      {actions.working && (
        <p role="status" class="muted">
          Working…
        </p>
      )}
    </>
  );
}
