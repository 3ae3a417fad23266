import { useRef, useState } from 'preact/hooks';
import type { FileUpload } from '../api/files';
import { bytes } from '../lib/format';
import { ErrorText } from './ui';

/**
 * Uploading on the Files page: files dropped anywhere on the folder's view,
 * or picked with the Upload button; one bar for the batch, from the
 * XMLHttpRequest's upload events to "done", and the API's refusal (over
 * UPLOAD_LIMIT_MB, over the disk limit) shown in its place.
 */

/** Props for the element files are dropped on, and whether a drag is over it. */
export function useFileDrop(enabled: boolean, onFiles: (files: File[]) => void) {
  const [over, setOver] = useState(false);
  const depth = useRef(0);
  const carriesFiles = (event: DragEvent) => event.dataTransfer?.types.includes('Files') ?? false;
  return {
    over,
    props: {
      onDragEnter: (event: DragEvent) => {
        if (!enabled || !carriesFiles(event)) return;
        event.preventDefault();
        depth.current++;
        setOver(true);
      },
      onDragOver: (event: DragEvent) => {
        if (!enabled || !carriesFiles(event)) return;
        event.preventDefault();
        if (event.dataTransfer) event.dataTransfer.dropEffect = 'copy';
      },
      onDragLeave: () => {
        depth.current = Math.max(0, depth.current - 1);
        if (depth.current === 0) setOver(false);
      },
      onDrop: (event: DragEvent) => {
        depth.current = 0;
        setOver(false);
        if (!enabled) return;
        event.preventDefault();
        const files = [...(event.dataTransfer?.files ?? [])];
        if (files.length > 0) onFiles(files);
      },
    },
  };
}

export function UploadButton({ disabled, onFiles }: { disabled: boolean; onFiles(files: File[]): void }) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <>
      <button type="button" disabled={disabled} onClick={() => input.current?.click()}>
        Upload
      </button>
      <input
        ref={input}
        type="file"
        multiple
        hidden
        aria-label="Files to upload"
        onChange={(e) => {
          const files = [...(e.currentTarget.files ?? [])];
          e.currentTarget.value = '';
          if (files.length > 0) onFiles(files);
        }}
      />
    </>
  );
}

/** The upload in flight or just over (api/files.ts useUploadFiles): nothing before the first, until dismissed after. */
export function UploadStatus({ upload }: { upload: FileUpload }) {
  if (upload.isIdle || !upload.variables) return null;
  const { progress, variables } = upload;
  const phase = upload.isPending ? 'sending' : upload.isSuccess ? 'done' : 'failed';
  const what = variables.files.length === 1 ? `“${variables.files[0]!.name}”` : `${variables.files.length} files`;
  const percent = progress.total > 0 ? Math.round((progress.loaded / progress.total) * 100) : 0;
  return (
    <div class={`card upload ${phase === 'failed' ? 'bad' : phase === 'done' ? 'ok' : ''}`} role="status">
      <p>
        {phase === 'sending' && `Uploading ${what}… ${percent}% (${bytes(progress.loaded)} of ${bytes(progress.total)})`}
        {phase === 'done' && `Uploaded ${what}.`}
        {phase === 'failed' && `The upload of ${what} failed.`}
      </p>
      <progress aria-label="Upload progress" max={100} value={phase === 'done' ? 100 : percent} data-phase={phase} />
      <ErrorText error={upload.error} />
      {phase !== 'sending' && (
        <button type="button" onClick={() => upload.reset()}>
          Dismiss
        </button>
      )}
    </div>
  );
}
