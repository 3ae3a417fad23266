/**
 * The seccomp filter (seccomp-profile.ts, docs/reference/containment.md) as data and in a real
 * container: what a hostile tenant tries is refused with the errno a program
 * expects (EPERM; ENOSYS for clone3, so glibc falls back to clone), while
 * ordinary programs (threads, forks, sockets with epoll, a JIT's mprotect,
 * node with worker threads, perl, sh) keep working.
 */
import { describe, expect, it } from 'vitest';
import { containerSpec } from '../../../../src/daemon/local/container/container-spec.js';
import {
  ALLOWED_SYSCALLS,
  CLONE_NAMESPACE_FLAGS,
  REFUSED_SYSCALLS,
  seccompProfile,
} from '../../../../src/daemon/local/container/seccomp-profile.js';
import { EXPECTED_PROBE_RESULTS, probeResults, syscallProbeBinary } from '../../../fixtures/syscall-probe.js';
import { NO_LIMITS, readLog, startProbe, useSandbox, waitFor } from './helpers.js';

const sandbox = useSandbox();

describe('the seccomp profile as data', () => {
  it('is an allowlist refusing with EPERM, for the 64-bit architectures only', () => {
    const profile = seccompProfile();
    expect(profile.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect(profile.defaultErrnoRet).toBe(1);
    expect(profile.architectures).toEqual(['SCMP_ARCH_X86_64', 'SCMP_ARCH_AARCH64']);
    expect(new Set(ALLOWED_SYSCALLS).size).toBe(ALLOWED_SYSCALLS.length);
  });

  it('allows none of the refused system calls, not even with conditions', () => {
    const allowed = seccompProfile()
      .syscalls.filter((rule) => rule.action === 'SCMP_ACT_ALLOW')
      .flatMap((rule) => rule.names);
    for (const name of REFUSED_SYSCALLS) expect(allowed, name).not.toContain(name);
  });

  it('allows clone only without namespace flags, clone3 answers ENOSYS, personality only its default', () => {
    const rules = seccompProfile().syscalls;
    expect(rules.find((rule) => rule.names.includes('clone'))).toEqual({
      names: ['clone'],
      action: 'SCMP_ACT_ALLOW',
      args: [{ index: 0, value: CLONE_NAMESPACE_FLAGS, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }],
    });
    expect(CLONE_NAMESPACE_FLAGS).toBe(0x20000 | 0x2000000 | 0x4000000 | 0x8000000 | 0x10000000 | 0x20000000 | 0x40000000);
    expect(rules.find((rule) => rule.names.includes('clone3'))).toEqual({
      names: ['clone3'],
      action: 'SCMP_ACT_ERRNO',
      errnoRet: 38,
    });
    const personas = rules.filter((rule) => rule.names.includes('personality')).map((rule) => rule.args?.[0]?.value);
    expect(personas).toEqual([0, 0xffffffff]);
  });

  it('is in every container spec', () => {
    const spec = containerSpec({
      serverUuid: 'a',
      startup: 'true',
      volumeDir: '/v',
      uid: 988,
      gid: 988,
      limits: NO_LIMITS,
      cgroupsPath: '/quetzal/a',
      hiddenPaths: [],
      host: { systemDirs: [], extraFiles: [], swapLimit: false, nofileHardLimit: 1024 },
    }) as { linux: { seccomp: unknown } };
    expect(spec.linux.seccomp).toEqual(seccompProfile());
  });
});

describe('the seccomp filter in a real container', () => {
  it('refuses what reaches past the box and leaves what programs need', async () => {
    const probe = await startProbe(
      sandbox(),
      'grep "^Seccomp:" /proc/self/status; ./syscall-probe; unshare -Ur true 2>&1 || echo "the unshare command was refused"; echo finished',
      NO_LIMITS,
      undefined,
      { 'syscall-probe': syscallProbeBinary() },
    );
    await waitFor(() => readLog(probe).includes('finished'), 'the probe', 15_000);
    const log = readLog(probe);
    expect(log).toMatch(/^Seccomp:\s+2$/m);
    expect(Object.fromEntries(probeResults(log))).toEqual(EXPECTED_PROBE_RESULTS);
    expect(log).toContain('the unshare command was refused');
  }, 30_000);

  it('runs node with worker threads, a JIT and sockets, perl and sh as before', async () => {
    const node = [
      "const { Worker } = require('node:worker_threads');",
      "const net = require('node:net');",
      "new Worker('require(\"node:worker_threads\").parentPort.postMessage(6 * 7)', { eval: true }).on('message', (n) => {",
      "  const server = net.createServer((s) => s.end('pong')).listen(0, '127.0.0.1', () => {",
      "    net.connect(server.address().port, '127.0.0.1').on('data', (d) => { console.log('node', n, String(d)); process.exit(0); });",
      '  });',
      '});',
    ].join('\n');
    const probe = await startProbe(
      sandbox(),
      'node app.js; perl -e \'print "perl ", 6 * 7, "\\n"\'; echo "sh $((6 * 7))"; echo finished',
      NO_LIMITS,
      undefined,
      { 'app.js': node },
    );
    await waitFor(() => readLog(probe).includes('finished'), 'the programs', 20_000);
    const log = readLog(probe);
    expect(log).toContain('node 42 pong');
    expect(log).toContain('perl 42');
    expect(log).toContain('sh 42');
  }, 30_000);
});
