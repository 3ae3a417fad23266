import { useMemo, useState } from 'preact/hooks';
import { Link, useLocation, useSearch } from 'wouter-preact';
import { useDirectory, useUploadFiles, type FileObject } from '../api/files';
import { Breadcrumbs, editorHref, filesHref } from '../components/file-breadcrumbs';
import { FileList, sortEntries, type Sort } from '../components/file-list';
import { UploadButton, UploadStatus, useFileDrop } from '../components/file-upload';
import { EntryDialogs, type EntryDialog } from '../components/files/entry-dialogs';
import { SelectionToolbar, useSelectionActions } from '../components/files/selection-toolbar';
import { ErrorText, Loading } from '../components/ui';
import { isTextFile, joinPath, normalisePath } from '../lib/file-paths';
import { useServer } from '../lib/server-context';

/**
 * The Files section (docs/reference/files-and-sftp.md): a folder of the server's volume with
 * breadcrumbs, the virtualised list, and what can be done to it and to the
 * selected entries, each offered only with its permission. The folder is in
 * the address (`?dir=`), so that back, forward and links work.
 */

export function FilesSection() {
  const { id, permissions } = useServer();
  const [, navigate] = useLocation();
  const directory = normalisePath(new URLSearchParams(useSearch()).get('dir') ?? '/');
  const listing = useDirectory(id, directory);
  const [sort, setSort] = useState<Sort>({ key: 'name', descending: false });
  const [selection, setSelection] = useState<{ directory: string; names: ReadonlySet<string> }>({ directory, names: new Set() });
  const selected = selection.directory === directory ? selection.names : new Set<string>();
  const select = (names: ReadonlySet<string>) => setSelection({ directory, names });
  const [dialog, setDialog] = useState<EntryDialog>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const actions = useSelectionActions(id);
  const uploader = useUploadFiles(id);

  const entries = useMemo(() => sortEntries(listing.data ?? [], sort), [listing.data, sort]);
  const chosen = entries.filter((entry) => selected.has(entry.name));

  const can = (permission: string) => permissions.can(permission);
  const clearToolbar = () => {
    setNotice(null);
    actions.reset();
  };
  const done = (message: string | null, keepSelection = false) => {
    setDialog(null);
    setNotice(message);
    if (!keepSelection) select(new Set());
  };

  const startUpload = (files: File[]) => uploader.mutate({ directory, files });
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
      actions.download.mutate(joinPath(directory, entry.name));
    }
  };

  return (
    <section aria-labelledby="files-title" class={`files${drop.over ? ' dropping' : ''}`} {...drop.props}>
      <div class="section-head">
        <h2 id="files-title">Files</h2>
        <div class="actions">
          <button type="button" disabled={!can('file.create')} onClick={() => setDialog('folder')}>
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
      <UploadStatus upload={uploader} />
      {canUpload && <p class="muted small drop-hint">Drop files here to upload them to this folder.</p>}
      <SelectionToolbar
        directory={directory}
        chosen={chosen}
        actions={actions}
        onStart={clearToolbar}
        onDialog={setDialog}
        onDone={done}
        onSelect={select}
      />
      {notice && (
        <p role="status" class="success">
          {notice}
        </p>
      )}
      <ErrorText error={actions.error} />
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

      <EntryDialogs open={dialog} directory={directory} chosen={chosen} onDone={done} onClose={() => setDialog(null)} />
    </section>
  );
}
