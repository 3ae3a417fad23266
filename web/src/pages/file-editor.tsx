import { useEffect, useState } from 'preact/hooks';
import { Link, useLocation, useSearch } from 'wouter-preact';
import { isTooLargeToEdit, useDirectory, useDownloadFile, useFileContents, useWriteFile } from '../api/files';
import { CodeEditor } from '../components/code-editor';
import { Breadcrumbs, editorHref, filesHref } from '../components/file-breadcrumbs';
import { LeaveGuard } from '../components/files/leave-guard';
import { ErrorText, Loading } from '../components/ui';
import { baseName, joinPath, normalisePath, parentOf } from '../lib/file-paths';
import { useServer } from '../lib/server-context';

/**
 * A file of the volume in CodeMirror (loaded with this page only): open
 * (`/files/edit?file=`), or write a new one (`/files/new?dir=`); save with
 * the button or Ctrl/Cmd+S. Unsaved changes hold back leaving the page
 * (components/files/leave-guard.tsx). A file over FILE_EDIT_MAX_MB shows the
 * API's refusal and offers the download instead.
 */

/** Why a new file's name cannot be saved, or null when it can. */
function nameProblem(name: string, siblings: readonly { name: string }[] | undefined): string | null {
  if (name === '' || name.includes('/')) return 'Give the file a name (without a slash).';
  if (siblings?.some((entry) => entry.name === name)) return `“${name}” already exists in this folder: open it to edit it.`;
  return null;
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
  const [nameError, setNameError] = useState<string | null>(null);
  // The text in the editor, and the text on disk (as loaded, then as last saved).
  const [text, setText] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);

  // Loaded once: a later answer (the query asks again on focus) must not undo typing.
  useEffect(() => {
    const loaded = contents.data;
    if (loaded === undefined) return;
    setSaved((current) => current ?? loaded);
    setText((current) => current ?? loaded);
  }, [contents.data]);
  const current = text ?? (creating ? '' : null);
  const dirty = creating ? (current ?? '') !== '' || name !== '' : current !== null && current !== saved;
  const allowed = permissions.can(creating ? 'file.create' : 'file.update');

  const save = () => {
    if (!allowed || write.isPending || current === null) return;
    const problem = creating ? nameProblem(name.trim(), siblings.data) : null;
    setNameError(problem);
    const target = creating ? joinPath(directory, name.trim()) : file;
    if (problem !== null || target === null) return;
    const written = current;
    write.mutate(
      { file: target, content: written },
      {
        onSuccess: () => {
          setSaved(written);
          if (creating) navigate(editorHref(target), { replace: true });
        },
      },
    );
  };
  const downloadFile = () => file && download.mutate(file);

  const title = creating ? 'New file' : baseName(file ?? '/');
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
            <button type="button" disabled={!permissions.can('file.read-content') || download.isPending} onClick={downloadFile}>
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
      {write.isSuccess && !dirty && (
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
      {isTooLargeToEdit(contents.error) && (
        <p>
          <button type="button" class="primary" disabled={download.isPending} onClick={downloadFile}>
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
      <LeaveGuard active={dirty} what={title} />
    </section>
  );
}
