#ifndef SWARMDECK_PROCESS_CONTROL_H
#define SWARMDECK_PROCESS_CONTROL_H

/// prctl(PR_SET_DUMPABLE, 0): no process of the same user may ptrace this one or read its
/// /proc files (environ, mem). prctl is variadic, so Swift cannot call it directly.
/// Returns 0, or -1 with errno set (always -1 with ENOSYS where prctl does not exist).
int swarmdeck_forbid_inspection(void);

#endif
