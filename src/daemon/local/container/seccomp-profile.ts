/**
 * The seccomp filter every confined server runs under (docs/reference/containment.md), as the OCI
 * spec's `linux.seccomp` (runc compiles it with libseccomp). An allowlist:
 * any system call not named here fails with EPERM, as under Docker's default
 * profile. It is at least as strict as Docker's for a container without
 * capabilities (which ours are) and stricter in what docs/CONTAINMENT.md
 * lists ("Seccomp"): no `ptrace`, `process_vm_readv/writev`, `pidfd_getfd`,
 * `name_to_handle_at`, `io_uring_*`, `userfaultfd`, `fanotify_mark`,
 * `modify_ldt`, `adjtimex`/`clock_adjtime`, `memfd_secret`,
 * `remap_file_pages`, no 32-bit system call tables, and `personality` only to
 * read or keep the default.
 *
 * Kept as data, written for this project (not Docker's file): what a game
 * server needs (threads, epoll, sockets, mmap/mprotect for JITs, prctl,
 * inotify, SysV and POSIX IPC, AIO) and nothing that reaches past its box.
 * Names libseccomp does not know on an architecture (`open` on aarch64,
 * `arch_prctl` there) are skipped by runc; system calls newer than the
 * filter answer ENOSYS (runc's own rule), so a program falls back.
 */

const EPERM = 1;
const ENOSYS = 38;

/**
 * clone()'s namespace flags: NEWNS 0x20000, NEWCGROUP 0x2000000, NEWUTS
 * 0x4000000, NEWIPC 0x8000000, NEWUSER 0x10000000, NEWPID 0x20000000, NEWNET
 * 0x40000000. A clone with any of them is refused; threads and forks pass.
 * (CLONE_NEWTIME shares its bit with the exit signal in clone() and is only
 * possible through clone3 and unshare, both refused.)
 */
export const CLONE_NAMESPACE_FLAGS = 0x7e020000;
/** socket()'s AF_VSOCK: talks to the hypervisor, past every namespace. */
const AF_VSOCK = 40;
/** personality(): PER_LINUX (the default) and 0xffffffff (read the current one). */
const ALLOWED_PERSONALITIES = [0x0, 0xffffffff];

/** Allowed with any arguments. Grouped by what they are for; order does not matter to the kernel. */
// prettier-ignore
export const ALLOWED_SYSCALLS: readonly string[] = [
  // files and folders
  'access', 'chdir', 'chmod', 'chown', 'close', 'close_range', 'copy_file_range', 'creat', 'dup', 'dup2', 'dup3',
  'faccessat', 'faccessat2', 'fadvise64', 'fallocate', 'fchdir', 'fchmod', 'fchmodat', 'fchmodat2', 'fchown', 'fchownat',
  'fcntl', 'fdatasync', 'flock', 'fstat', 'fstatfs', 'fsync', 'ftruncate', 'futimesat', 'getcwd', 'getdents', 'getdents64',
  'ioctl', 'lchown', 'link', 'linkat', 'lseek', 'lstat', 'mkdir', 'mkdirat', 'mknod', 'mknodat', 'newfstatat', 'open',
  'openat', 'openat2', 'pread64', 'preadv', 'preadv2', 'pwrite64', 'pwritev', 'pwritev2', 'read', 'readahead', 'readlink',
  'readlinkat', 'readv', 'rename', 'renameat', 'renameat2', 'rmdir', 'sendfile', 'splice', 'stat', 'statfs', 'statx',
  'symlink', 'symlinkat', 'sync', 'sync_file_range', 'syncfs', 'tee', 'truncate', 'umask', 'unlink', 'unlinkat', 'utime',
  'utimensat', 'utimes', 'vmsplice', 'write', 'writev',
  'fgetxattr', 'flistxattr', 'fremovexattr', 'fsetxattr', 'getxattr', 'lgetxattr', 'listxattr', 'llistxattr',
  'lremovexattr', 'lsetxattr', 'removexattr', 'setxattr',
  'inotify_add_watch', 'inotify_init', 'inotify_init1', 'inotify_rm_watch',
  // Linux AIO (not io_uring: its kernel side has had the most escapes of any interface; libuv and Java fall back)
  'io_cancel', 'io_destroy', 'io_getevents', 'io_pgetevents', 'io_setup', 'io_submit',
  // memory
  'brk', 'madvise', 'map_shadow_stack', 'membarrier', 'memfd_create', 'mincore', 'mlock', 'mlock2', 'mlockall', 'mmap',
  'mprotect', 'mremap', 'mseal', 'msync', 'munlock', 'munlockall', 'munmap', 'pkey_alloc', 'pkey_free', 'pkey_mprotect',
  // processes, threads, signals (clone is below, with its flags checked)
  'execve', 'execveat', 'exit', 'exit_group', 'fork', 'vfork', 'wait4', 'waitid', 'kill', 'tkill', 'tgkill',
  'pidfd_open', 'pidfd_send_signal', 'restart_syscall', 'rt_sigaction', 'rt_sigpending', 'rt_sigprocmask',
  'rt_sigqueueinfo', 'rt_sigreturn', 'rt_sigsuspend', 'rt_sigtimedwait', 'rt_tgsigqueueinfo', 'sigaltstack',
  'signalfd', 'signalfd4', 'pause', 'futex', 'futex_requeue', 'futex_wait', 'futex_waitv', 'futex_wake',
  'get_robust_list', 'set_robust_list', 'set_tid_address', 'rseq', 'get_thread_area', 'set_thread_area', 'arch_prctl',
  'prctl', 'seccomp', 'capget', 'capset', 'landlock_add_rule', 'landlock_create_ruleset', 'landlock_restrict_self',
  // who am I, limits, scheduling
  'getcpu', 'getegid', 'geteuid', 'getgid', 'getgroups', 'getpgid', 'getpgrp', 'getpid', 'getppid', 'getpriority',
  'getresgid', 'getresuid', 'getrlimit', 'getrusage', 'getsid', 'gettid', 'getuid', 'prlimit64', 'setrlimit',
  'setfsgid', 'setfsuid', 'setgid', 'setgroups', 'setpgid', 'setpriority', 'setregid', 'setresgid', 'setresuid',
  'setreuid', 'setsid', 'setuid', 'ioprio_get', 'ioprio_set', 'sched_getaffinity', 'sched_getattr', 'sched_getparam',
  'sched_get_priority_max', 'sched_get_priority_min', 'sched_getscheduler', 'sched_rr_get_interval',
  'sched_setaffinity', 'sched_setattr', 'sched_setparam', 'sched_setscheduler', 'sched_yield', 'sysinfo', 'uname',
  // time
  'alarm', 'clock_getres', 'clock_gettime', 'clock_nanosleep', 'getitimer', 'gettimeofday', 'nanosleep', 'setitimer',
  'time', 'timer_create', 'timer_delete', 'timer_getoverrun', 'timer_gettime', 'timer_settime', 'timerfd_create',
  'timerfd_gettime', 'timerfd_settime', 'times',
  // waiting on descriptors
  'epoll_create', 'epoll_create1', 'epoll_ctl', 'epoll_pwait', 'epoll_pwait2', 'epoll_wait', 'eventfd', 'eventfd2',
  'pipe', 'pipe2', 'poll', 'ppoll', 'pselect6', 'select',
  // sockets (socket itself is below, AF_VSOCK refused)
  'accept', 'accept4', 'bind', 'connect', 'getpeername', 'getsockname', 'getsockopt', 'listen', 'recvfrom',
  'recvmmsg', 'recvmsg', 'sendmmsg', 'sendmsg', 'sendto', 'setsockopt', 'shutdown', 'socketpair',
  // IPC, in the container's own IPC namespace
  'mq_getsetattr', 'mq_notify', 'mq_open', 'mq_timedreceive', 'mq_timedsend', 'mq_unlink', 'msgctl', 'msgget',
  'msgrcv', 'msgsnd', 'semctl', 'semget', 'semop', 'semtimedop', 'shmat', 'shmctl', 'shmdt', 'shmget',
  // randomness
  'getrandom',
];

/**
 * Named here only to say they stay refused (they fall under the default
 * action anyway); the tests check that none is allowed, so that a later edit
 * to the list above cannot let one in unnoticed.
 */
// prettier-ignore
export const REFUSED_SYSCALLS: readonly string[] = [
  'unshare', 'setns', 'clone3', 'mount', 'umount2', 'pivot_root', 'chroot', 'fsopen', 'fsmount', 'fsconfig', 'fspick',
  'move_mount', 'open_tree', 'mount_setattr', 'ptrace', 'pidfd_getfd', 'process_vm_readv', 'process_vm_writev',
  'process_madvise', 'kcmp', 'keyctl', 'add_key', 'request_key', 'bpf', 'perf_event_open', 'userfaultfd', 'kexec_load',
  'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'open_by_handle_at', 'name_to_handle_at', 'swapon',
  'swapoff', 'reboot', 'syslog', 'acct', 'quotactl', 'quotactl_fd', 'io_uring_setup', 'io_uring_enter',
  'io_uring_register', 'fanotify_init', 'fanotify_mark', 'lookup_dcookie', 'sethostname', 'setdomainname',
  'settimeofday', 'clock_settime', 'adjtimex', 'clock_adjtime', 'iopl', 'ioperm', 'modify_ldt', 'vhangup', 'mbind',
  'set_mempolicy', 'get_mempolicy', 'migrate_pages', 'move_pages', 'memfd_secret', 'remap_file_pages', 'uselib', 'ustat',
  'sysfs', '_sysctl', 'nfsservctl',
];

export interface SeccompRule {
  readonly names: readonly string[];
  readonly action: 'SCMP_ACT_ALLOW' | 'SCMP_ACT_ERRNO';
  readonly errnoRet?: number;
  readonly args?: readonly { readonly index: number; readonly value: number; readonly valueTwo?: number; readonly op: string }[];
}

export interface SeccompProfile {
  readonly defaultAction: 'SCMP_ACT_ERRNO';
  readonly defaultErrnoRet: number;
  readonly architectures: readonly string[];
  readonly syscalls: readonly SeccompRule[];
}

/**
 * The filter as runc reads it. Architectures: the 64-bit ones Quetzal runs
 * on; the 32-bit tables on the same machines (x86's int 0x80, x32, arm32)
 * are not in it, so a system call through them is refused as a foreign
 * architecture's (runc kills the thread) instead of being a second door to
 * the kernel that the list above does not look at.
 */
export function seccompProfile(): SeccompProfile {
  return {
    defaultAction: 'SCMP_ACT_ERRNO',
    defaultErrnoRet: EPERM,
    architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_AARCH64'],
    syscalls: [
      { names: ALLOWED_SYSCALLS, action: 'SCMP_ACT_ALLOW' },
      // Threads and forks, never a new namespace.
      {
        names: ['clone'],
        action: 'SCMP_ACT_ALLOW',
        args: [{ index: 0, value: CLONE_NAMESPACE_FLAGS, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }],
      },
      // ENOSYS, not EPERM: glibc (2.34+) then falls back to clone, whose flags the rule above can check (clone3's are in memory).
      { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
      { names: ['socket'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: AF_VSOCK, op: 'SCMP_CMP_NE' }] },
      ...ALLOWED_PERSONALITIES.map((persona): SeccompRule => ({
        names: ['personality'],
        action: 'SCMP_ACT_ALLOW',
        args: [{ index: 0, value: persona, op: 'SCMP_CMP_EQ' }],
      })),
    ],
  };
}
