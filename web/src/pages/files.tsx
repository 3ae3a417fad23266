import { useMemo, useState } from 'preact/hooks';
import { Link, useLocation, useSearch } from 'wouter-preact';
import {
  useChmodFiles,
  useCompressFiles,
  useCopyFile,
  useCreateFolder,
  useDecompressFile,
  useDeleteFiles,
  useDirectory,
  useDownloadFile,
  useRenameFiles,
  useUploadFiles,
  type FileObject,
} from '../api/files';
import { ChmodDialog, NameDialog } from '../components/file-dialogs';
import { FileList, sortEntries, type Sort } from '../components/file-list';
import { UploadButton, UploadStatus, useFileDrop, type UploadState } from '../components/file-upload';
import { ConfirmDialog, ErrorText, Loading } from '../components/ui';
import { destinationOf, isArchive, isTextFile, joinPath, normalisePath } from '../lib/file-paths';
import { Breadcrumbs, editorHref, filesHref } from '../components/file-breadcrumbs';
import { useServer } from '../lib/server-context';

/**
 * The Files section (docs/reference/files-and-sftp.md): a folder of the server's volume with
 * breadcrumbs, the virtualised list, and what can be done to it and to the
 * selected entries, each offered only with its permission. The folder is in
 * the address (`?dir=`), so that back, forward and links work.
 */

type Dialog = 'folder' | 'rename' | 'chmod' | 'delete' | null;

export function FilesSection() {
  const { id, permissions } = useServer();
  const [, navigate] = useLocation();
  const directory = normalisePath(new URLSearchParams(useSearch()).get('dir') ?? '/');
  const listing = useDirectory(id, directory);
  const [sort, setSort] = useState<Sort>({ key: 'name', descending: false });
  const [selection, setSelection] = useState<{ directory: string; names: ReadonlySet<string> }>({ directory, names: new Set() });
  const selected = selection.directory === directory ? selection.names : new Set<string>();
  const select = (names: ReadonlySet<string>) => setSelection({ directory, names });
  const [dialog, setDialog] = useState<Dialog>(null);
  const [upload, setUpload] = useState<UploadState | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const createFolder = useCreateFolder(id);
  const rename = useRenameFiles(id);
  const copy = useCopyFile(id);
  const remove = useDeleteFiles(id);
  const chmod = useChmodFiles(id);
  const compress = useCompressFiles(id);
  const decompress = useDecompressFile(id);
  const download = useDownloadFile(id);
  const uploader = useUploadFiles(id);
  // The error of the last toolbar action (copy, compress, decompress, download), shown under the toolbar.
  const toolbarActions = [copy, compress, decompress, download];
  const toolbarError = toolbarActions.find((action) => action.isError)?.error ?? null;

  const entries = useMemo(() => sortEntries(listing.data ?? [], sort), [listing.data, sort]);
  const chosen = entries.filter((entry) => selected.has(entry.name));
  const names = chosen.map((entry) => entry.name);
  const one = chosen.length === 1 ? chosen[0]! : null;

  const can = (permission: string) => permissions.can(permission);
  const openDialog = (which: Dialog) => {
    for (const action of [createFolder, rename, remove, chmod]) action.reset();
    setDialog(which);
  };
  const clearToolbar = () => {
    setNotice(null);
    for (const action of toolbarActions) action.reset();
  };
  const done = (message: string | null, keepSelection = false) => {
    setDialog(null);
    setNotice(message);
    if (!keepSelection) select(new Set());
  };

  const startUpload = (files: File[]) => {
    const state: UploadState = {
      names: files.map((f) => f.name),
      progress: { loaded: 0, total: 0 },
      phase: 'sending',
      error: null,
    };
    setUpload(state);
    uploader.mutate(
      { directory, files, onProgress: (progress) => setUpload((current) => current && { ...current, progress }) },
      {
        onSuccess: () => setUpload((current) => current && { ...current, phase: 'done' }),
        onError: (error) => setUpload((current) => current && { ...current, phase: 'failed', error }),
      },
    );
  };
  const canUpload = can('file.create');
  const drop = useFileDrop(canUpload && !uploader.isPending, startUpload);

  const hrefOf = (entry: FileObject) => {
    const path = joinPath(directory, entry.name);
    if (!entry.is_file) return filesHref(path);
    return can('file.read-content') && isTextFile(entry.name, entry.mimetype) ? editorHref(path) : null;
  };
  const open = (entry: FileObject) => {
    const href = hrefOf(entry);
    if (href !== null) navigate(href);
    else if (can('file.read-content')) {
      clearToolbar();
      download.mutate(joinPath(directory, entry.name));
    }
  };

  return (
    <section aria-labelledby="files-title" class={`files${drop.over ? ' dropping' : ''}`} {...drop.props}>
      <div class="section-head">
        <h2 id="files-title">Files</h2>
        <div class="actions">
          <button type="button" disabled={!can('file.create')} onClick={() => openDialog('folder')}>
            New folder
          </button>
          {can('file.create') ? (
            <Link class="button" href={`/files/new?${new URLSearchParams({ dir: directory })}`}>
              New file
            </Link>
          ) : (
            <button type="button" disabled>
              New file
            </button>
          )}
          <UploadButton disabled={!canUpload || uploader.isPending} onFiles={startUpload} />
        </div>
      </div>
      <Breadcrumbs path={directory} current />
      <UploadStatus upload={upload} onDismiss={() => setUpload(null)} />
      {canUpload && <p class="muted small drop-hint">Drop files here to upload them to this folder.</p>}
      <div class="file-toolbar" role="toolbar" aria-label="Selected entries">
        <span class="muted">{chosen.length > 0 ? `${chosen.length} selected` : 'Nothing selected'}</span>
        <button type="button" disabled={chosen.length === 0 || !can('file.update')} onClick={() => openDialog('rename')}>
          Rename or move
        </button>
        <button
          type="button"
          disabled={!one?.is_file || !can('file.create') || copy.isPending}
          onClick={() => {
            clearToolbar();
            if (one) copy.mutate(joinPath(directory, one.name), { onSuccess: () => done(`Copied “${one.name}”.`) });
          }}
        >
          Copy
        </button>
        <button
          type="button"
          disabled={!one?.is_file || !can('file.read-content') || download.isPending}
          onClick={() => {
            clearToolbar();
            if (one) download.mutate(joinPath(directory, one.name));
          }}
        >
          Download
        </button>
        <button type="button" disabled={chosen.length === 0 || !can('file.update')} onClick={() => openDialog('chmod')}>
          Permissions
        </button>
        <button
          type="button"
          disabled={chosen.length === 0 || !can('file.archive') || compress.isPending}
          onClick={() => {
            clearToolbar();
            compress.mutate(
              { directory, names },
              {
                onSuccess: (archive) => {
                  done(`Created “${archive.name}”.`, true);
                  select(new Set([archive.name]));
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
            clearToolbar();
            if (one) decompress.mutate({ directory, name: one.name }, { onSuccess: () => done(`Unpacked “${one.name}”.`) });
          }}
        >
          Decompress
        </button>
        <button
          type="button"
          class="danger"
          disabled={chosen.length === 0 || !can('file.delete')}
          onClick={() => openDialog('delete')}
        >
          Delete
        </button>
      </div>
      {(compress.isPending || decompress.isPending) && (
        <p role="status" class="muted">
          Working…
        </p>
      )}
      {notice && (
        <p role="status" class="success">
          {notice}
        </p>
      )}
      <ErrorText error={toolbarError} />
      {listing.isPending && <Loading what="the folder" />}
      <ErrorText error={listing.error} />
      {listing.data && (
        <>
          <FileList
            label={`Files in ${directory}`}
            entries={entries}
            selected={selected}
            sort={sort}
            onSort={setSort}
            onSelect={select}
            hrefOf={hrefOf}
            onOpen={open}
          />
          <p class="muted small">
            {entries.length === 0 ? 'This folder is empty.' : `${entries.length.toLocaleString('en')} entries`}
          </p>
        </>
      )}

      <NameDialog
        open={dialog === 'folder'}
        title="New folder"
        label="Folder name"
        confirmLabel="Create folder"
        initial=""
        busy={createFolder.isPending}
        error={createFolder.error}
        onConfirm={(name) => createFolder.mutate({ directory, name }, { onSuccess: () => done(`Created “${name}”.`) })}
        onCancel={() => setDialog(null)}
      />
      <NameDialog
        open={dialog === 'rename' && one !== null}
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
            onSuccess: () => done(`Moved “${one.name}” to ${to}.`),
          });
        }}
        onCancel={() => setDialog(null)}
      />
      <NameDialog
        open={dialog === 'rename' && chosen.length > 1}
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
          rename.mutate(moves, { onSuccess: () => done(`Moved ${moves.length} entries to ${folder}.`) });
        }}
        onCancel={() => setDialog(null)}
      />
      <ChmodDialog
        open={dialog === 'chmod'}
        names={names}
        initial={chosen[0]?.mode_bits.slice(-3).padStart(3, '0') ?? '644'}
        busy={chmod.isPending}
        error={chmod.error}
        onConfirm={(mode) =>
          chmod.mutate({ directory, names, mode }, { onSuccess: () => done(`Permissions set to ${mode}.`, true) })
        }
        onCancel={() => setDialog(null)}
      />
      <ConfirmDialog
        open={dialog === 'delete'}
        title={names.length === 1 ? `Delete “${names[0]}”?` : `Delete ${names.length} entries?`}
        confirmLabel="Delete"
        danger
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() =>
          remove.mutate(
            { directory, names },
            { onSuccess: () => done(`Deleted ${names.length === 1 ? `“${names[0]}”` : `${names.length} entries`}.`) },
          )
        }
        onCancel={() => setDialog(null)}
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
    </section>
  );
}
