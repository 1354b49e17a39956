/**
 * The complete environment of a sandboxed script: the caller's variables plus a fixed set.
 * Nothing is inherited from the platform's process.env.
 */
export function sandboxEnv(
  userEnv: Readonly<Record<string, string>>,
  venvBin: string,
): Record<string, string> {
  for (const [key, value] of Object.entries(userEnv)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
      throw new TypeError(`invalid environment variable name "${key}"`);
    if (typeof value !== 'string' || value.includes('\0')) {
      throw new TypeError(`environment variable ${key} must be a string without NUL characters`);
    }
  }
  return {
    ...userEnv,
    PATH: `${venvBin}:/usr/local/bin:/usr/bin:/bin`,
    HOME: '/tmp',
    LANG: 'C.UTF-8',
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    // RLIMIT_AS counts reserved address space; glibc reserves 64 MiB per thread arena, so a
    // few threads would exhaust a modest memory limit without using the memory.
    MALLOC_ARENA_MAX: '2',
  };
}
