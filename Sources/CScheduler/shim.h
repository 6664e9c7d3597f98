#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// sched_getattr(2) and sched_setattr(2) have no glibc wrappers, and syscall(2) is variadic, which
// Swift cannot call. The attributes' layout is the kernel's (SCHED_ATTR_SIZE_VER1, 56 bytes).
// The fair policies (<linux/sched.h>; glibc names SCHED_BATCH only with _GNU_SOURCE).
enum { cscheduler_other = 0, cscheduler_batch = 3 };

struct cscheduler_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
};

// The time slice of thread `tid` (0: the caller) in nanoseconds: the kernel's `sched_runtime` for
// a SCHED_OTHER or SCHED_BATCH thread (Linux 6.12 or later; 0 before). A negative errno on
// failure; -EINVAL for a thread of another policy (real-time, idle, deadline).
static inline int64_t cscheduler_slice(pid_t tid) {
    struct cscheduler_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, tid, &attr, sizeof attr, 0) != 0) return -errno;
    if (attr.sched_policy != cscheduler_other && attr.sched_policy != cscheduler_batch) return -EINVAL;
    return (int64_t)attr.sched_runtime;
}

// Asks for a time slice of `nanoseconds` (0: the kernel's default) for thread `tid`, keeping its
// policy, nice value and reset-on-fork flag; threads it starts afterwards inherit it. 0, or an
// errno: EINVAL for a thread of another policy, EPERM where a seccomp filter forbids the call.
static inline int cscheduler_set_slice(pid_t tid, uint64_t nanoseconds) {
    struct cscheduler_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, tid, &attr, sizeof attr, 0) != 0) return errno;
    if (attr.sched_policy != cscheduler_other && attr.sched_policy != cscheduler_batch) return EINVAL;
    attr.size = sizeof attr;
    attr.sched_flags &= 0x01; // SCHED_FLAG_RESET_ON_FORK; no utilization clamps
    attr.sched_runtime = nanoseconds;
    attr.sched_deadline = 0;
    attr.sched_period = 0;
    if (syscall(SYS_sched_setattr, tid, &attr, 0) != 0) return errno;
    return 0;
}
