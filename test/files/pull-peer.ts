import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/**
 * A web server in a network namespace of its own, reached over a veth pair:
 * 198.51.100.1/24 on this side (so an address of this machine), 198.51.100.2
 * inside. TEST-NET-2 is public by the pull's rules, so the pull's positive
 * cases connect to .2 for real. Needs root (ip netns).
 */
export interface PullPeer {
  /** http://198.51.100.2:<port> */
  base: string;
  port: number;
  close(): void;
}

const PEER_SCRIPT = String.raw`
const http = require('node:http');
const target = process.argv[1];
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const big = (n) => Buffer.alloc(n, 120);
  switch (url.pathname) {
    case '/file': res.writeHead(200, { 'content-length': 14 }); return res.end('pulled content');
    case '/named': res.writeHead(200, { 'content-disposition': 'attachment; filename="../from header.txt"' }); return res.end('named');
    case '/big': res.writeHead(200, { 'content-length': 2 * 1024 * 1024 }); return res.end(big(2 * 1024 * 1024));
    case '/nolength': { res.writeHead(200); let left = 8; const send = () => { if (left-- === 0) return res.end(); res.write(big(256 * 1024), send); }; return send(); }
    case '/to-file': res.writeHead(302, { location: '/file' }); return res.end();
    case '/to-loopback': res.writeHead(302, { location: target }); return res.end();
    case '/to-ftp': res.writeHead(302, { location: 'ftp://198.51.100.2/x' }); return res.end();
    case '/loop': { const n = Number(url.searchParams.get('n') || 0); res.writeHead(302, { location: n > 0 ? '/loop?n=' + (n - 1) : '/file' }); return res.end(); }
    default: res.writeHead(404); return res.end('no');
  }
});
server.listen(0, '198.51.100.2', () => console.log(String(server.address().port)));
`;

export async function startPullPeer(loopbackTarget: string): Promise<PullPeer> {
  const id = randomBytes(3).toString('hex');
  const ns = `qfh-${id}`;
  const hostSide = `qfh${id}h`;
  const nsSide = `qfh${id}n`;
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
  ip('netns', 'add', ns);
  let child: ChildProcess | undefined;
  const close = () => {
    child?.kill('SIGKILL');
    try {
      ip('link', 'del', hostSide);
    } catch {
      // Gone with the namespace already.
    }
    try {
      ip('netns', 'del', ns);
    } catch {
      // Already removed.
    }
  };
  try {
    ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', nsSide);
    ip('link', 'set', nsSide, 'netns', ns);
    ip('addr', 'add', '198.51.100.1/24', 'dev', hostSide);
    ip('link', 'set', hostSide, 'up');
    ip('netns', 'exec', ns, 'ip', 'addr', 'add', '198.51.100.2/24', 'dev', nsSide);
    ip('netns', 'exec', ns, 'ip', 'link', 'set', nsSide, 'up');
    ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up');
    child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', PEER_SCRIPT, loopbackTarget], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child!.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(Number(out.trim()));
      });
      child!.on('exit', (code) => reject(new Error(`the peer exited (${code})`)));
    });
    return { base: `http://198.51.100.2:${port}`, port, close };
  } catch (err) {
    close();
    throw err;
  }
}
