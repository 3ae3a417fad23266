/**
 * Every HTTP call of the Files pages (docs/reference/files-and-sftp.md), each with its TanStack Query
 * hook and the cache it invalidates, in one place: the pages never build a
 * files URL themselves. Paths are the volume's absolute paths
 * (lib/file-paths.ts). A mutation's error is the API's own
 * `errors[0].detail` (ApiError), which the page shows beside the control
 * that caused it.
 */
import { useMutation, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useState } from 'preact/hooks';
import { ApiError, csrfToken, get, post, put, request, type ApiErrorItem } from './client';
import { serverUrl } from './servers';
import type { Item, List } from './types';
import { normalisePath, relativeToRoot } from '../lib/file-paths';

/** Pterodactyl's `file_object`. */
export interface FileObject {
  name: string;
  mode: string;
  mode_bits: string;
  size: number;
  is_file: boolean;
  is_symlink: boolean;
  mimetype: string;
  created_at: string;
  modified_at: string;
}

type SignedUrl = Item<'signed_url', { url: string }>;

const filesUrl = (server: string, action: string, params?: Record<string, string>) =>
  serverUrl(server, `files/${action}${params ? `?${new URLSearchParams(params)}` : ''}`);

const directoryKey = (server: string, directory: string) => ['files', server, 'list', normalisePath(directory)] as const;
const contentsKey = (server: string, file: string) => ['files', server, 'contents', normalisePath(file)] as const;

/** After any change: every listing and file of the server may be stale (a move touches two folders). */
const invalidateFiles = (client: QueryClient, server: string) => client.invalidateQueries({ queryKey: ['files', server] });

export function useDirectory(server: string, directory: string, enabled = true) {
  return useQuery({
    queryKey: directoryKey(server, directory),
    queryFn: async ({ signal }) =>
      (
        await get<List<Item<'file_object', FileObject>>>(
          filesUrl(server, 'list', { directory: normalisePath(directory) }),
          signal,
        )
      ).data.map((item) => item.attributes),
    enabled,
  });
}

/** Whether useFileContents failed because the file is over FILE_EDIT_MAX_MB (a 400): the editor offers its download. */
export const isTooLargeToEdit = (error: unknown) => error instanceof ApiError && error.status === 400;

/** A file's text for the editor; the 400 over FILE_EDIT_MAX_MB is the error, with the API's message. */
export function useFileContents(server: string, file: string, enabled = true) {
  return useQuery({
    queryKey: contentsKey(server, file),
    queryFn: ({ signal }) =>
      request<string>('GET', filesUrl(server, 'contents', { file: normalisePath(file) }), { text: true, signal }),
    enabled,
    // What is on disk now, not two seconds ago: the editor saves over it.
    staleTime: 0,
    gcTime: 0,
  });
}

export function useWriteFile(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ file, content }: { file: string; content: string }) =>
      request<void>('POST', filesUrl(server, 'write', { file: normalisePath(file) }), { rawBody: content }),
    // The editor holds what it wrote: only the listings (sizes, a new name) need asking again.
    onSuccess: () => client.invalidateQueries({ queryKey: ['files', server, 'list'] }),
  });
}

export function useCreateFolder(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ directory, name }: { directory: string; name: string }) =>
      post(filesUrl(server, 'create-folder'), { root: normalisePath(directory), name }),
    onSuccess: () => invalidateFiles(client, server),
  });
}

/** Renames and moves: each pair is a pair of volume paths, sent from the root so that a move may cross folders. */
export function useRenameFiles(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (moves: readonly { from: string; to: string }[]) =>
      put(filesUrl(server, 'rename'), {
        root: '/',
        files: moves.map(({ from, to }) => ({ from: relativeToRoot(from), to: relativeToRoot(to) })),
      }),
    onSuccess: () => invalidateFiles(client, server),
  });
}

export function useCopyFile(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (file: string) => post(filesUrl(server, 'copy'), { location: normalisePath(file) }),
    onSuccess: () => invalidateFiles(client, server),
  });
}

export function useDeleteFiles(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ directory, names }: { directory: string; names: readonly string[] }) =>
      post(filesUrl(server, 'delete'), { root: normalisePath(directory), files: names }),
    onSuccess: () => invalidateFiles(client, server),
  });
}

/** Permission bits as Pterodactyl's front end sends them: an octal string such as "644". */
export function useChmodFiles(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ directory, names, mode }: { directory: string; names: readonly string[]; mode: string }) =>
      post(filesUrl(server, 'chmod'), { root: normalisePath(directory), files: names.map((file) => ({ file, mode })) }),
    onSuccess: () => invalidateFiles(client, server),
  });
}

export function useCompressFiles(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async ({ directory, names }: { directory: string; names: readonly string[] }) =>
      (
        await post<Item<'file_object', FileObject>>(filesUrl(server, 'compress'), {
          root: normalisePath(directory),
          files: names,
        })
      ).attributes,
    onSuccess: () => invalidateFiles(client, server),
  });
}

export function useDecompressFile(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ directory, name }: { directory: string; name: string }) =>
      post(filesUrl(server, 'decompress'), { root: normalisePath(directory), file: name }),
    onSuccess: () => invalidateFiles(client, server),
  });
}

/** Asks for a signed download URL, then lets the browser fetch it (Content-Disposition: attachment keeps the page). */
export function useDownloadFile(server: string) {
  return useMutation({
    mutationFn: async (file: string) => {
      const signed = await get<SignedUrl>(filesUrl(server, 'download', { file: normalisePath(file) }));
      const link = document.createElement('a');
      link.href = signed.attributes.url;
      link.download = '';
      link.rel = 'noopener';
      document.body.append(link);
      link.click();
      link.remove();
      return signed.attributes.url;
    },
  });
}

export interface UploadProgress {
  loaded: number;
  total: number;
}

/**
 * Uploads files into a folder: a signed URL from GET /files/upload, then one
 * multipart POST of `files` parts to it through XMLHttpRequest, whose upload
 * events give the progress (fetch gives none for a request's body). The
 * mutation comes with the bytes sent so far of the upload in flight.
 */
export function useUploadFiles(server: string) {
  const client = useQueryClient();
  const [progress, setProgress] = useState<UploadProgress>({ loaded: 0, total: 0 });
  const mutation = useMutation({
    mutationFn: async ({ directory, files }: { directory: string; files: readonly File[] }) => {
      setProgress({ loaded: 0, total: 0 });
      const signed = await get<SignedUrl>(filesUrl(server, 'upload'));
      // Sent to this page's origin whatever APP_URL names (a proxy's name, localhost for 127.0.0.1):
      // the console may only connect to its own origin (CSP connect-src 'self').
      const signedTarget = new URL(signed.attributes.url, location.href);
      const target = new URL(signedTarget.pathname + signedTarget.search, location.href);
      target.searchParams.set('directory', normalisePath(directory));
      const form = new FormData();
      for (const file of files) form.append('files', file, file.name);
      await sendWithProgress(target.toString(), form, setProgress);
    },
    onSettled: () => invalidateFiles(client, server),
  });
  return { ...mutation, progress };
}

/** An upload as the page shows it: its files (`variables`), its state, its progress, and `reset` to dismiss it. */
export type FileUpload = ReturnType<typeof useUploadFiles>;

function sendWithProgress(url: string, body: FormData, onProgress: (progress: UploadProgress) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    xhr.setRequestHeader('accept', 'application/json');
    // The signed URL is the upload's credential; the token also satisfies a same-origin session check.
    const token = csrfToken();
    if (token && new URL(url).origin === location.origin) xhr.setRequestHeader('x-xsrf-token', token);
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress({ loaded: event.loaded, total: event.total });
    });
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve();
        return;
      }
      let errors: ApiErrorItem[] = [];
      try {
        const parsed: unknown = JSON.parse(xhr.responseText);
        if (parsed && typeof parsed === 'object' && Array.isArray((parsed as { errors?: unknown }).errors))
          errors = (parsed as { errors: ApiErrorItem[] }).errors;
      } catch {
        // Not JSON: the status says it.
      }
      reject(new ApiError(xhr.status, errors[0]?.detail || `The upload was refused (${xhr.status}).`, errors));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'The upload could not reach the panel.')));
    xhr.addEventListener('abort', () => reject(new ApiError(0, 'The upload was cancelled.')));
    xhr.send(body);
  });
}
