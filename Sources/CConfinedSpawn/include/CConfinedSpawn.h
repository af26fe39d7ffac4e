#ifndef PARLEY_CONFINED_SPAWN_H
#define PARLEY_CONFINED_SPAWN_H

#include <sys/types.h>

/* Starts a child confined before it runs a single instruction of the program it executes
 * (issue 29: the thumbnail decoder reads hostile bytes). Everything that allocates or can
 * fail in complicated ways is prepared in the parent (pc_confinement_prepare); the forked
 * child makes raw system calls only, then execve. See ConfinedSpawn.swift for the Swift side
 * and docs/ARCHITECTURE.md "Thumbnails" for why each step is there. */

/* The rlimits the child gets (0 leaves that one as it is). */
struct pc_limits {
    unsigned long long cpu_seconds;
    unsigned long long address_space_bytes;
    unsigned long long file_size_bytes;
    unsigned long long open_files;
};

/* What the parent prepared: a Landlock ruleset (or -1 without Landlock) and a seccomp
 * program (NULL without). Freed by pc_confinement_free. */
struct pc_confinement;

/* The Landlock ABI version the kernel offers (0: none, or the syscall is filtered). */
int pc_landlock_abi(void);

/* Prepares the confinement: a Landlock ruleset that allows reading and executing below each
 * of `exec_paths` (directories or files), reading `input_fd`'s file, reading and writing
 * /dev/null, reading /dev/urandom, and nothing else (no
 * other file, no TCP, no abstract Unix socket, no signal outside the domain, where the
 * kernel's ABI knows these), and a seccomp filter that refuses with EPERM every call that
 * makes a socket or reaches another process or the kernel's attack surface (see the .c).
 * `use_landlock` 0 skips Landlock (a kernel without it). Returns NULL and sets errno, and a
 * step name in *failed_step, on failure. */
struct pc_confinement *pc_confinement_prepare(
    const char *const *exec_paths, int exec_path_count, int input_fd, int use_landlock,
    const char **failed_step);

void pc_confinement_free(struct pc_confinement *c);

/* fork + confine + execve. stdin is `stdin_fd` (the input), stdout and stderr the given
 * descriptors; every other descriptor is closed. Returns the pid, or -1 with errno set and a
 * step name in *failed_step when the parent could not fork or the child could not confine
 * itself or exec (reported over a close-on-exec pipe, so a failure is never mistaken for the
 * program's own exit status). */
pid_t pc_spawn(
    const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd,
    const struct pc_limits *limits, const struct pc_confinement *c, const char **failed_step);

#endif
