/**
 * A service process for the SIGKILL test (run with `node --import tsx`):
 * writes `<volume>/target.bin` through LocalFiles.writeFile from a stream of
 * CHUNKS chunks, printing `chunk <n>` as each is handed over and `done` at
 * the end, until the test kills it.
 * Usage: write-child.ts <volumes dir> <server uuid> <chunks> <chunk bytes>
 */
import path from 'node:path';
import { Readable } from 'node:stream';
import { LocalFiles } from '../../../../src/daemon/local/files/local-files.js';

const [volumes, uuid, chunksArg, bytesArg] = process.argv.slice(2) as [string, string, string, string];
const chunks = Number(chunksArg);
const chunkBytes = Number(bytesArg);
const files = new LocalFiles({
  volumeDir: (id) => path.join(volumes, id),
  backupPath: (id) => path.join(volumes, `${id}.tar.gz`),
  ownerOf: () => undefined,
  volumeUsage: async () => ({ bytes: 0, inodes: 0 }),
});
let sent = 0;
const content = new Readable({
  read() {
    if (sent === chunks) return void this.push(null);
    sent++;
    process.stdout.write(`chunk ${sent}\n`);
    this.push(Buffer.alloc(chunkBytes, 'n'));
  },
});
await files.writeFile({ uuid, startup: null, stopCommand: null }, 'target.bin', content);
process.stdout.write('done\n');
