/* The thumbnail child's confinement (issue 29): rlimits, no_new_privs, a Landlock domain and
 * a seccomp filter, applied by the forked child to itself before execve. Landlock and
 * seccomp are inherited across execve and can never be lifted, so the decoder that reads a
 * hostile picture starts already confined. Works inside the shipped systemd unit (it needs
 * no namespaces, unlike bubblewrap under RestrictNamespaces=yes) as long as the unit allows
 * the landlock_* and seccomp calls (systemd/parleyd.service.in says why).
 *
 * The parent prepares everything that allocates (the Landlock ruleset is an fd, the seccomp
 * program a buffer exported by libseccomp); between fork and execve the child only makes
 * system calls, which is what a child of a multi-threaded process may do. */
#define _GNU_SOURCE
#include "CConfinedSpawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Landlock's UAPI (include/uapi/linux/landlock.h), declared here because Debian 12's
 * linux-libc-dev (6.1) predates ABI 3 to 6; the values are the kernel's ABI and never change. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#define PC_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define PC_LANDLOCK_RULE_PATH_BENEATH 1

#define PC_FS_EXECUTE (1ULL << 0)
#define PC_FS_WRITE_FILE (1ULL << 1)
#define PC_FS_READ_FILE (1ULL << 2)
#define PC_FS_READ_DIR (1ULL << 3)
/* ABI 1 handles bits 0-12 (also remove, make char/dir/reg/sock/fifo/block/sym). */
#define PC_FS_ABI1 ((1ULL << 13) - 1)
#define PC_FS_REFER (1ULL << 13)      /* ABI 2 */
#define PC_FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define PC_FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
#define PC_NET_BIND_TCP (1ULL << 0)   /* ABI 4 */
#define PC_NET_CONNECT_TCP (1ULL << 1)
#define PC_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define PC_SCOPE_SIGNAL (1ULL << 1)

struct pc_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct pc_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

struct pc_confinement {
    int ruleset_fd; /* -1: no Landlock */
    struct sock_fprog program; /* filter NULL: no seccomp */
};

int pc_landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, PC_LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? 0 : (int)abi;
}

/* The file-system rights this ABI knows: all of them are handled (denied unless a rule
 * allows), so a right a newer kernel adds is never silently left open. */
static uint64_t fs_rights(int abi) {
    uint64_t r = PC_FS_ABI1;
    if (abi >= 2) r |= PC_FS_REFER;
    if (abi >= 3) r |= PC_FS_TRUNCATE;
    if (abi >= 5) r |= PC_FS_IOCTL_DEV;
    return r;
}

static int add_rule(int ruleset, int fd, uint64_t access) {
    struct pc_path_beneath_attr attr = {.allowed_access = access, .parent_fd = fd};
    return (int)syscall(SYS_landlock_add_rule, ruleset, PC_LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
}

/* Allows `path` (followed if a link): `dir_access` if it is a directory, `file_access`
 * otherwise. A path this host lacks (/lib64 on some) is simply not allowed: 0. */
static int add_path_rule(int ruleset, const char *path, uint64_t dir_access, uint64_t file_access) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? add_rule(ruleset, fd, S_ISDIR(st.st_mode) ? dir_access : file_access) : -1;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc < 0 ? -1 : 0;
}

static int make_ruleset(const char *const *paths, int count, int input_fd, const char **step) {
    int abi = pc_landlock_abi();
    if (abi < 1) {
        *step = "landlock_create_ruleset (the kernel has no Landlock, or a filter refuses it)";
        errno = ENOSYS;
        return -1;
    }
    struct pc_ruleset_attr attr = {.handled_access_fs = fs_rights(abi)};
    size_t size = sizeof(uint64_t);
    if (abi >= 4) {
        /* No rule allows any port: no TCP bind or connect at all. */
        attr.handled_access_net = PC_NET_BIND_TCP | PC_NET_CONNECT_TCP;
        size = 2 * sizeof(uint64_t);
    }
    if (abi >= 6) {
        /* No abstract Unix socket and no signal outside the child's own domain. */
        attr.scoped = PC_SCOPE_ABSTRACT_UNIX_SOCKET | PC_SCOPE_SIGNAL;
        size = sizeof attr;
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (ruleset < 0) {
        *step = "landlock_create_ruleset";
        return -1;
    }
    /* Directories: read and execute below them. Files (/etc/ld.so.cache): read. */
    for (int i = 0; i < count; i++) {
        if (add_path_rule(ruleset, paths[i], PC_FS_EXECUTE | PC_FS_READ_FILE | PC_FS_READ_DIR,
                          PC_FS_EXECUTE | PC_FS_READ_FILE) != 0) {
            int saved = errno;
            close(ruleset);
            errno = saved;
            *step = "landlock_add_rule";
            return -1;
        }
    }
    /* /dev/null (read and write: a tool may send output there) and /dev/urandom (read: a
     * library may seed from it); nothing else under /dev. */
    if (add_path_rule(ruleset, "/dev/null", 0, PC_FS_READ_FILE | PC_FS_WRITE_FILE) != 0
        || add_path_rule(ruleset, "/dev/urandom", 0, PC_FS_READ_FILE) != 0) {
        int saved = errno;
        close(ruleset);
        errno = saved;
        *step = "landlock_add_rule (/dev)";
        return -1;
    }
    /* The input: its one file, read only. The child reads it through /proc/self/fd/0,
     * which resolves to this file, so no directory of the daemon's is ever allowed. */
    if (input_fd >= 0 && add_rule(ruleset, input_fd, PC_FS_READ_FILE) < 0) {
        int saved = errno;
        close(ruleset);
        errno = saved;
        *step = "landlock_add_rule (the input)";
        return -1;
    }
    return ruleset;
}

/* Calls refused with EPERM: every way to a socket (Landlock ABI < 4 does not cover TCP and
 * no ABI covers a path-named Unix socket), to another process's memory, and to the parts of
 * the kernel a decoder never needs and exploits like (namespaces, mounts, keyrings, BPF,
 * perf, userfaultfd, io_uring, modules). libseccomp adds the architecture check (x32 and
 * i386 calls are killed). */
static const int denied_calls[] = {
    SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind), SCMP_SYS(listen),
    SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv),
    SCMP_SYS(process_vm_writev), SCMP_SYS(pidfd_getfd), SCMP_SYS(kcmp), SCMP_SYS(mount),
    SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot), SCMP_SYS(unshare), SCMP_SYS(setns),
    SCMP_SYS(open_tree), SCMP_SYS(move_mount), SCMP_SYS(fsopen), SCMP_SYS(fsconfig), SCMP_SYS(fsmount),
    SCMP_SYS(fspick), SCMP_SYS(mount_setattr), SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key),
    SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd), SCMP_SYS(io_uring_setup),
    SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register), SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load),
    SCMP_SYS(init_module), SCMP_SYS(finit_module), SCMP_SYS(delete_module), SCMP_SYS(name_to_handle_at),
    SCMP_SYS(open_by_handle_at), SCMP_SYS(fanotify_init), SCMP_SYS(personality), SCMP_SYS(acct),
    SCMP_SYS(swapon), SCMP_SYS(swapoff), SCMP_SYS(reboot), SCMP_SYS(syslog), SCMP_SYS(quotactl),
    SCMP_SYS(iopl), SCMP_SYS(ioperm), SCMP_SYS(modify_ldt), SCMP_SYS(uselib), SCMP_SYS(vhangup),
};

static int make_filter(struct sock_fprog *out, const char **step) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        *step = "seccomp_init";
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < sizeof denied_calls / sizeof denied_calls[0] && rc == 0; i++) {
        /* A call this architecture lacks is negative here: nothing to refuse. */
        if (denied_calls[i] < 0) continue;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied_calls[i], 0);
    }
    if (rc != 0) {
        seccomp_release(ctx);
        errno = -rc;
        *step = "seccomp_rule_add";
        return -1;
    }
    /* libseccomp 2.5 exports the program to a descriptor only: a pipe, read back whole. */
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        seccomp_release(ctx);
        *step = "pipe";
        return -1;
    }
    rc = seccomp_export_bpf(ctx, p[1]);
    seccomp_release(ctx);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        errno = -rc;
        *step = "seccomp_export_bpf";
        return -1;
    }
    /* The program is a few hundred instructions; 64 KiB (the pipe's buffer) bounds it. */
    size_t cap = 65536, len = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        close(p[0]);
        *step = "malloc";
        return -1;
    }
    for (;;) {
        ssize_t n = read(p[0], buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
        if (len == cap) break;
    }
    close(p[0]);
    if (len == 0 || len == cap || len % sizeof(struct sock_filter) != 0) {
        free(buf);
        errno = EINVAL;
        *step = "seccomp_export_bpf (size)";
        return -1;
    }
    out->len = (unsigned short)(len / sizeof(struct sock_filter));
    out->filter = (struct sock_filter *)buf;
    return 0;
}

struct pc_confinement *pc_confinement_prepare(
    const char *const *exec_paths, int exec_path_count, int input_fd, int use_landlock, const char **failed_step) {
    const char *unused;
    if (!failed_step) failed_step = &unused;
    *failed_step = "";
    struct pc_confinement *c = calloc(1, sizeof *c);
    if (!c) {
        *failed_step = "calloc";
        return NULL;
    }
    c->ruleset_fd = -1;
    if (use_landlock) {
        c->ruleset_fd = make_ruleset(exec_paths, exec_path_count, input_fd, failed_step);
        if (c->ruleset_fd < 0) {
            int saved = errno;
            free(c);
            errno = saved;
            return NULL;
        }
        /* Not inherited by other children of the daemon. */
        fcntl(c->ruleset_fd, F_SETFD, FD_CLOEXEC);
    }
    if (make_filter(&c->program, failed_step) != 0) {
        int saved = errno;
        if (c->ruleset_fd >= 0) close(c->ruleset_fd);
        free(c);
        errno = saved;
        return NULL;
    }
    return c;
}

void pc_confinement_free(struct pc_confinement *c) {
    if (!c) return;
    if (c->ruleset_fd >= 0) close(c->ruleset_fd);
    free(c->program.filter);
    free(c);
}

/* The steps the child reports (an index into this list, then errno). */
static const char *const child_steps[] = {
    "dup2", "setrlimit", "prctl(PR_SET_NO_NEW_PRIVS)", "landlock_restrict_self", "close_range",
    "seccomp (load the filter)", "execve",
};

struct child_report {
    int32_t step;
    int32_t error;
};

static void fail(int report_fd, int step) {
    struct child_report r = {.step = step, .error = errno};
    ssize_t n;
    do { n = write(report_fd, &r, sizeof r); } while (n < 0 && errno == EINTR);
    _exit(127);
}

/* Closes every descriptor from `from` up; close_range (Linux 5.9), else one by one. */
static int close_from(int from) {
    if (syscall(SYS_close_range, (unsigned)from, ~0U, 0) == 0) return 0;
    struct rlimit rl;
    long top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 65536;
    for (long fd = from; fd < top; fd++) close((int)fd);
    return 0;
}

pid_t pc_spawn(
    const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd,
    const struct pc_limits *limits, const struct pc_confinement *c, const char **failed_step) {
    const char *unused;
    if (!failed_step) failed_step = &unused;
    *failed_step = "";
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        *failed_step = "pipe";
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(report[0]);
        close(report[1]);
        errno = saved;
        *failed_step = "fork";
        return -1;
    }
    if (pid == 0) {
        /* The child: system calls only from here to execve. */
        int w = report[1];
        /* Move the three descriptors and the report pipe above anything 0-3 could clash with. */
        int in = fcntl(stdin_fd, F_DUPFD_CLOEXEC, 10);
        int out = fcntl(stdout_fd, F_DUPFD_CLOEXEC, 10);
        int err = fcntl(stderr_fd, F_DUPFD_CLOEXEC, 10);
        if (in < 0 || out < 0 || err < 0) fail(w, 0);
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) fail(w, 0);
        if (dup3(w, 3, O_CLOEXEC) < 0) fail(w, 0);
        w = 3;
        if (limits) {
            const struct { int resource; unsigned long long value; } rl[] = {
                {RLIMIT_CPU, limits->cpu_seconds}, {RLIMIT_AS, limits->address_space_bytes},
                {RLIMIT_FSIZE, limits->file_size_bytes}, {RLIMIT_NOFILE, limits->open_files},
            };
            for (size_t i = 0; i < sizeof rl / sizeof rl[0]; i++) {
                if (rl[i].value == 0) continue;
                struct rlimit r = {.rlim_cur = (rlim_t)rl[i].value, .rlim_max = (rlim_t)rl[i].value};
                if (setrlimit(rl[i].resource, &r) != 0) fail(w, 1);
            }
            /* No core file: a crashed decoder must not write the picture's bytes to disk. */
            struct rlimit none = {0, 0};
            if (setrlimit(RLIMIT_CORE, &none) != 0) fail(w, 1);
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(w, 2);
        if (c && c->ruleset_fd >= 0 && syscall(SYS_landlock_restrict_self, c->ruleset_fd, 0) != 0) fail(w, 3);
        /* Everything of the daemon's but 0-2 and the report pipe (3, closed by execve). */
        if (close_from(4) != 0) fail(w, 4);
        if (c && c->program.filter && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &c->program, 0, 0) != 0)
            fail(w, 5);
        execve(path, argv, envp);
        fail(w, 6);
    }
    close(report[1]);
    struct child_report r;
    ssize_t n;
    do { n = read(report[0], &r, sizeof r); } while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof r) {
        /* The child could not confine itself or exec: reap it, say where it stopped. */
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        int step = r.step >= 0 && r.step < (int)(sizeof child_steps / sizeof child_steps[0]) ? r.step : 6;
        *failed_step = child_steps[step];
        errno = r.error;
        return -1;
    }
    return pid;
}
