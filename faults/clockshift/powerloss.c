/*
 * powerloss — make `kill -9` of a redis-server lose what a power cut
 * would: the append-only file's bytes that were written but not synced
 * (the `redlock-restart` scenario's `crash=power`).
 *
 * A process killed with SIGKILL loses nothing it handed to write(2): the
 * kernel's page cache keeps it and writes it out later, so `kill -9`
 * cannot tell `appendfsync always` from `everysec` or `no`. This preload
 * holds back, in the process's own memory, every byte written to a file
 * whose name ends in ".aof", and hands it to the kernel only when the
 * process syncs that file (fsync, fdatasync) or closes it. A kill then
 * loses exactly the unsynced bytes, as a power cut loses the page cache.
 *
 * Raw system calls only (no dlsym, no malloc), as clockshift.c: Debian's
 * redis-server links jemalloc. A file's held bytes are capped at
 * POWERLOSS_HOLD bytes; past that they are written through (counted in the
 * report file as "overflowed").
 *
 * POWERLOSS_REPORT, when set, names a file this preload rewrites after
 * every write and sync: "held <bytes> synced <bytes> overflowed <bytes>",
 * the bytes held back now, the bytes handed to the kernel by syncs so
 * far, and the bytes written through past the cap. The scenario reads it
 * just before the kill: the bytes held are the bytes the crash loses.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FD 1024
#define POWERLOSS_HOLD (4 << 20)
#define SLOTS 4

struct held {
    int fd; /* -1: free */
    size_t len;
    char *bytes;
};

/* The bytes live in .bss (zero pages, taken only when touched); the
 * slots' fds start at -1 (free). */
static char slot_bytes[SLOTS][POWERLOSS_HOLD];
static struct held slots[SLOTS] = {{-1, 0, slot_bytes[0]}, {-1, 0, slot_bytes[1]},
                                   {-1, 0, slot_bytes[2]}, {-1, 0, slot_bytes[3]}};
static volatile char tracked[MAX_FD];
static volatile int lock_word;
static unsigned long long synced_total, overflowed_total;

static void lock(void) {
    while (__sync_lock_test_and_set(&lock_word, 1)) {
    }
}
static void unlock(void) { __sync_lock_release(&lock_word); }

static int ends_with_aof(const char *path) {
    size_t n = strlen(path);
    return n >= 4 && strcmp(path + n - 4, ".aof") == 0;
}

static struct held *slot_of(int fd, int create) {
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].fd == fd) return &slots[i];
    if (!create) return 0;
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].fd == -1) {
            slots[i].fd = fd;
            slots[i].len = 0;
            return &slots[i];
        }
    return 0;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        long w = syscall(SYS_write, fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

static void put_number(char *buf, size_t *at, unsigned long long v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) buf[(*at)++] = tmp[--n];
}

/* Called with the lock held. */
static void report(void) {
    const char *path = getenv("POWERLOSS_REPORT");
    if (!path) return;
    unsigned long long held = 0;
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].fd != -1) held += slots[i].len;
    char buf[128];
    size_t at = 0;
    memcpy(buf + at, "held ", 5), at += 5;
    put_number(buf, &at, held);
    memcpy(buf + at, " synced ", 8), at += 8;
    put_number(buf, &at, synced_total);
    memcpy(buf + at, " overflowed ", 12), at += 12;
    put_number(buf, &at, overflowed_total);
    buf[at++] = '\n';
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    write_all(fd, buf, at);
    syscall(SYS_close, fd);
}

/* Hand fd's held bytes to the kernel. Called with the lock held. */
static void release_held(int fd) {
    struct held *h = slot_of(fd, 0);
    if (!h) return;
    write_all(fd, h->bytes, h->len);
    synced_total += h->len;
    h->len = 0;
}

static void track(int fd, const char *path) {
    if (fd >= 0 && fd < MAX_FD) tracked[fd] = (char)ends_with_aof(path);
}

/* Every open variant: the mode is read only when O_CREAT asks for one. */
static int open_tracked(int dirfd, const char *path, int flags, va_list ap) {
    mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
    int fd = (int)syscall(SYS_openat, dirfd, path, flags, mode);
    track(fd, path);
    return fd;
}

int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int fd = open_tracked(AT_FDCWD, path, flags, ap);
    va_end(ap);
    return fd;
}

int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int fd = open_tracked(AT_FDCWD, path, flags, ap);
    va_end(ap);
    return fd;
}

int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int fd = open_tracked(dirfd, path, flags, ap);
    va_end(ap);
    return fd;
}

ssize_t write(int fd, const void *buf, size_t n) {
    if (fd < 0 || fd >= MAX_FD || !tracked[fd]) return (ssize_t)syscall(SYS_write, fd, buf, n);
    lock();
    struct held *h = slot_of(fd, 1);
    if (!h || h->len + n > POWERLOSS_HOLD) {
        if (h) release_held(fd);
        unlock();
        long w = syscall(SYS_write, fd, buf, n);
        lock();
        if (w > 0) overflowed_total += (unsigned long long)w;
        report();
        unlock();
        return (ssize_t)w;
    }
    memcpy(h->bytes + h->len, buf, n);
    h->len += n;
    report();
    unlock();
    return (ssize_t)n;
}

static int sync_fd(int fd, long nr) {
    if (fd >= 0 && fd < MAX_FD && tracked[fd]) {
        lock();
        release_held(fd);
        report();
        unlock();
    }
    return (int)syscall(nr, fd);
}

int fsync(int fd) { return sync_fd(fd, SYS_fsync); }
int fdatasync(int fd) { return sync_fd(fd, SYS_fdatasync); }

int close(int fd) {
    if (fd >= 0 && fd < MAX_FD && tracked[fd]) {
        lock();
        release_held(fd);
        struct held *h = slot_of(fd, 0);
        if (h) h->fd = -1;
        tracked[fd] = 0;
        report();
        unlock();
    }
    return (int)syscall(SYS_close, fd);
}
