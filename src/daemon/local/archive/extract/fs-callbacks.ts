import fs from 'node:fs';

// The callback forms of fs: a file write takes five calls, and the promise API's FileHandle costs more per call.
function fsCall<T>(start: (done: (err: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => start((err, value) => (err ? reject(err) : resolve(value))));
}
export const openFile = (target: string, flags: number, mode: number) => fsCall<number>((cb) => fs.open(target, flags, mode, cb));
export const closeFile = (fd: number) => fsCall<void>((cb) => fs.close(fd, (err) => cb(err ?? null, undefined)));
export const fchmod = (fd: number, mode: number) =>
  fsCall<void>((cb) => fs.fchmod(fd, mode, (err) => cb(err ?? null, undefined)));
export const futimes = (fd: number, time: Date) =>
  fsCall<void>((cb) => fs.futimes(fd, time, time, (err) => cb(err ?? null, undefined)));
export const writev = (fd: number, buffers: Buffer[]) =>
  fsCall<number>((cb) => fs.writev(fd, buffers, (err, written) => cb(err, written)));
