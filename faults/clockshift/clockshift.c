/*
 * clockshift — shift one process's wall clock by an offset that can change
 * while it runs (the `clock-jump` and `clock-skew` scenarios).
 *
 * Why not libfaketime: Debian's redis-server links jemalloc, and libfaketime
 * cannot initialise under jemalloc ("Unexpected recursive calls to
 * clock_gettime()", libfaketime issue #130, open). This preload uses raw
 * system calls only — no dlsym, no malloc — so it cannot recurse.
 *
 * CLOCKSHIFT_FILE names a file holding the offset in milliseconds (signed
 * decimal, e.g. "+30000"); it is re-read at most once a millisecond.
 * Only the wall clock (CLOCK_REALTIME*, gettimeofday, time) moves; the
 * monotonic clock is left alone, as a real clock jump would.
 *
 * CLOCKSHIFT_RATE_PPM (signed parts per million, e.g. "-50000") makes the
 * monotonic clocks (CLOCK_MONOTONIC, its coarse twin, CLOCK_BOOTTIME) run
 * at 1 + ppm / 10^6 of real time from the first reading on: a slow (or
 * fast) oscillator, smooth, never backwards. CLOCK_MONOTONIC_RAW stays
 * real: the reference a proof reads beside it. (The `clock-slew`
 * scenario's `clock=client`: the client measures its elapsed time, its
 * validity and its work on this clock.)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile long long offset_ns;
static volatile long long next_read_ns;

static long long raw_ns(clockid_t clock) {
    struct timespec ts;
    syscall(SYS_clock_gettime, clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void refresh(void) {
    long long now = raw_ns(CLOCK_MONOTONIC);
    if (now < next_read_ns) return;
    next_read_ns = now + 1000000LL;
    const char *path = getenv("CLOCKSHIFT_FILE");
    if (!path) return;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[32];
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0) return;
    buf[n] = 0;
    long long sign = 1, ms = 0;
    int i = 0;
    while (buf[i] == ' ') i++;
    if (buf[i] == '-') { sign = -1; i++; } else if (buf[i] == '+') i++;
    for (; buf[i] >= '0' && buf[i] <= '9'; i++) ms = ms * 10 + (buf[i] - '0');
    offset_ns = sign * ms * 1000000LL;
}

static volatile int rate_read;
static volatile long long rate_ppm;
static volatile long long rate_base_ns;

static long long parse_ll(const char *s) {
    long long sign = 1, v = 0;
    if (*s == '-') { sign = -1; s++; } else if (*s == '+') s++;
    for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (*s - '0');
    return sign * v;
}

/* A monotonic reading `t` (ns) at the process's rate: the base is the
 * first reading, so the clock starts where the real one is. */
static long long at_rate(long long t) {
    if (!rate_read) {
        const char *ppm = getenv("CLOCKSHIFT_RATE_PPM");
        rate_ppm = ppm ? parse_ll(ppm) : 0;
        rate_base_ns = t;
        rate_read = 1;
    }
    if (rate_ppm == 0) return t;
    long long since = t - rate_base_ns;
    return rate_base_ns + since + (long long)((__int128)since * rate_ppm / 1000000);
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    long r = syscall(SYS_clock_gettime, clock, ts);
    if (r == 0 && (clock == CLOCK_MONOTONIC || clock == CLOCK_MONOTONIC_COARSE || clock == CLOCK_BOOTTIME)) {
        long long t = at_rate((long long)ts->tv_sec * 1000000000LL + ts->tv_nsec);
        ts->tv_sec = t / 1000000000LL;
        ts->tv_nsec = t % 1000000000LL;
    }
    if (r == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
        refresh();
        long long t = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns;
        ts->tv_sec = t / 1000000000LL;
        ts->tv_nsec = t % 1000000000LL;
    }
    return (int)r;
}

int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
