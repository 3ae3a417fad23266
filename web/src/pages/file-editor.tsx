import { useEffect, useState } from 'preact/hooks';
import { Link, useLocation, useSearch } from 'wouter-preact';
import { ApiError } from '../api/client';
import { useDirectory, useDownloadFile, useFileContents, useWriteFile } from '../api/files';
import { CodeEditor } from '../components/code-editor';
import { ConfirmDialog, ErrorText, Loading } from '../components/ui';
import { baseName, joinPath, normalisePath, parentOf } from '../lib/file-paths';
import { useServer } from '../lib/server-context';
import { Breadcrumbs, editorHref, filesHref } from '../components/file-breadcrumbs';

/**
 * A file of the volume in CodeMirror (loaded with this page only): open
 * (`/files/edit?file=`), or write a new one (`/files/new?dir=`); save with
 * the button or Ctrl/Cmd+S. Unsaved changes hold back leaving the page: the
 * browser asks before closing the tab, and a link in the console asks here
 * first. A file over FILE_EDIT_MAX_MB shows the API's refusal and offers
 * the download instead.
 */

/** While `dirty`, a click on any link of the console asks first; the tab's closing asks the browser's way. */
function useLeaveGuard(dirty: boolean, ask: (href: string) => void) {
  useEffect(() => {
    if (!dirty) return;
    const beforeUnload = (event: BeforeUnloadEvent) => event.preventDefault();
    const click = (event: MouseEvent) => {
      const link = (event.target as Element | null)?.closest?.('a[href]');
      if (!(link instanceof HTMLAnchorElement) || link.target || link.origin !== location.origin || event.defaultPrevented)
        return;
      event.preventDefault();
      event.stopPropagation();
      ask(link.pathname + link.search);
    };
    window.addEventListener('beforeunload', beforeUnload);
    document.addEventListener('click', click, true);
    return () => {
      window.removeEventListener('beforeunload', beforeUnload);
      document.removeEventListener('click', click, true);
    };
  }, [dirty]);
}

export function FileEditorPage({ creating }: { creating: boolean }) {
  const { id, permissions } = useServer();
  const [, navigate] = useLocation();
  const search = new URLSearchParams(useSearch());
  const file = creating ? null : normalisePath(search.get('file') ?? '/');
  const directory = creating ? normalisePath(search.get('dir') ?? '/') : parentOf(file ?? '/');
  const contents = useFileContents(id, file ?? '/', file !== null);
  const siblings = useDirectory(id, directory, creating);
  const write = useWriteFile(id);
  const download = useDownloadFile(id);
  const [name, setName] = useState('');
  const [text, setText] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [savedAt, setSavedAt] = useState<number | null>(null);
  const [nameError, setNameError] = useState<string | null>(null);
  const [leaving, setLeaving] = useState<string | null>(null);

  const [discarded, setDiscarded] = useState(false);
  // The file as loaded is what is saved; typing makes it differ. Loaded once: later answers must not undo typing.
  useEffect(() => {
    if (contents.data !== undefined && saved === null) {
      setSaved(contents.data);
      setText(contents.data);
    }
  }, [contents.data]);
  const current = text ?? (creating ? '' : null);
  const dirty = creating ? (current ?? '') !== '' || name !== '' : current !== null && current !== saved;
  const allowed = permissions.can(creating ? 'file.create' : 'file.update');
  useLeaveGuard(dirty && !discarded, setLeaving);

  const save = () => {
    if (!allowed || write.isPending || current === null) return;
    setNameError(null);
    let target = file;
    if (creating) {
      const trimmed = name.trim();
      if (trimmed === '' || trimmed.includes('/')) {
        setNameError('Give the file a name (without a slash).');
        return;
      }
      if (siblings.data?.some((entry) => entry.name === trimmed)) {
        setNameError(`“${trimmed}” already exists in this folder: open it to edit it.`);
        return;
      }
      target = joinPath(directory, trimmed);
    }
    if (target === null) return;
    const written = current;
    write.mutate(
      { file: target, content: written },
      {
        onSuccess: () => {
          setSaved(written);
          setSavedAt(Date.now());
          if (creating) navigate(editorHref(target), { replace: true });
        },
      },
    );
  };

  const title = creating ? 'New file' : baseName(file ?? '/');
  const tooLarge = contents.error instanceof ApiError && contents.error.status === 400;
  return (
    <section aria-labelledby="editor-title" class="file-editor">
      <div class="section-head">
        <h2 id="editor-title">{title}</h2>
        {dirty && <span class="badge warn">Unsaved changes</span>}
        <div class="actions">
          <Link class="button" href={filesHref(directory)}>
            Back to folder
          </Link>
          {!creating && (
            <button
              type="button"
              disabled={!permissions.can('file.read-content') || download.isPending}
              onClick={() => file && download.mutate(file)}
            >
              Download
            </button>
          )}
          <button
            type="button"
            class="primary"
            disabled={!allowed || write.isPending || current === null || (!dirty && !creating)}
            onClick={save}
          >
            {write.isPending ? 'Saving…' : 'Save'}
          </button>
        </div>
      </div>
      <Breadcrumbs path={creating ? directory : (file ?? '/')} current={!creating} />
      {!allowed && (
        <p class="notice">
          You can read this file but not save it: that needs the {creating ? 'file.create' : 'file.update'} permission.
        </p>
      )}
      <ErrorText error={write.error} />
      <ErrorText error={download.error} />
      {savedAt !== null && !dirty && !write.isError && (
        <p role="status" class="success">
          Saved.
        </p>
      )}
      {creating && (
        <label class="file-name">
          File name
          <input
            class="mono"
            value={name}
            aria-invalid={nameError !== null}
            autoComplete="off"
            spellcheck={false}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </label>
      )}
      <ErrorText error={nameError} />
      {!creating && contents.isPending && <Loading what="the file" />}
      {!creating && <ErrorText error={contents.error} />}
      {tooLarge && (
        <p>
          <button type="button" class="primary" disabled={download.isPending} onClick={() => file && download.mutate(file)}>
            Download it instead
          </button>
        </p>
      )}
      {current !== null && (creating || contents.isSuccess) && (
        <CodeEditor
          key={file ?? `new:${directory}`}
          name={creating ? name : (file ?? '')}
          initial={current}
          label={`Contents of ${creating ? 'the new file' : baseName(file ?? '/')}`}
          readOnly={!allowed}
          onChange={setText}
          onSave={save}
        />
      )}
      <ConfirmDialog
        open={leaving !== null}
        title="Leave without saving?"
        confirmLabel="Leave"
        danger
        onConfirm={() => {
          const href = leaving;
          setLeaving(null);
          setDiscarded(true);
          // After the guard is gone (the next render); `~` is an address from the site's root.
          if (href) setTimeout(() => navigate(`~${href}`), 0);
        }}
        onCancel={() => setLeaving(null)}
      >
        <p>Your changes to {title} are not saved.</p>
      </ConfirmDialog>
    </section>
  );
}
