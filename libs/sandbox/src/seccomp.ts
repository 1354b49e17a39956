/**
 * A seccomp filter (classic BPF, as `bwrap --seccomp` loads it) that stops the script from
 * creating user namespaces. As root, bwrap cannot give the sandbox its own user namespace (see
 * bwrap.ts), so --disable-userns is unavailable; nested user namespaces are a common step in
 * kernel exploits and no tap needs one. Everything else is allowed.
 */
interface Arch {
  audit: number;
  clone: number;
  unshare: number;
  clone3: number;
}

const ARCHES: Partial<Record<NodeJS.Architecture, Arch>> = {
  x64: { audit: 0xc000003e, clone: 56, unshare: 272, clone3: 435 },
  arm64: { audit: 0xc00000b7, clone: 220, unshare: 97, clone3: 435 },
};

const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const CLONE_NEWUSER = 0x10000000;
/** x32 syscalls on x86_64 carry this bit; refusing them closes that alternate entry. */
const X32_SYSCALL_BIT = 0x40000000;
// struct seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low 32 bits, little-endian).
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0 = 16;

/** The filter for this machine, or null where the syscall numbers are not known. */
export function userNamespaceFilter(arch: NodeJS.Architecture = process.arch): Buffer | null {
  const a = ARCHES[arch];
  if (!a) return null;
  // Jump offsets are relative to the next instruction; ALLOW=10, DENY=11, NOSYS=12.
  const program: [number, number, number, number][] = [
    [LD_W_ABS, 0, 0, OFFSET_ARCH], // 0
    [JEQ_K, 1, 0, a.audit], // 1: a foreign ABI (e.g. int 0x80) is refused outright
    [RET_K, 0, 0, RET_ERRNO | EPERM], // 2
    [LD_W_ABS, 0, 0, OFFSET_NR], // 3
    [JGE_K, 6, 0, X32_SYSCALL_BIT], // 4 -> DENY
    [JEQ_K, 5, 0, a.unshare], // 5 -> DENY: unprivileged unshare() is only useful with CLONE_NEWUSER
    [JEQ_K, 5, 0, a.clone3], // 6 -> NOSYS: its flags are behind a pointer; libc falls back to clone
    [JEQ_K, 0, 2, a.clone], // 7 -> 8, else ALLOW
    [LD_W_ABS, 0, 0, OFFSET_ARG0], // 8: clone flags
    [JSET_K, 1, 0, CLONE_NEWUSER], // 9 -> DENY, else ALLOW
    [RET_K, 0, 0, RET_ALLOW], // 10 ALLOW
    [RET_K, 0, 0, RET_ERRNO | EPERM], // 11 DENY
    [RET_K, 0, 0, RET_ERRNO | ENOSYS], // 12 NOSYS
  ];
  const buffer = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    buffer.writeUInt16LE(code, i * 8);
    buffer.writeUInt8(jt, i * 8 + 2);
    buffer.writeUInt8(jf, i * 8 + 3);
    buffer.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return buffer;
}
