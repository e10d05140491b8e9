#include "process_control.h"

#include <errno.h>

#if defined(__linux__)
#include <sys/prctl.h>

int swarmdeck_forbid_inspection(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}
#else
int swarmdeck_forbid_inspection(void) {
    errno = ENOSYS;
    return -1;
}
#endif
