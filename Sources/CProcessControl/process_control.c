#define _GNU_SOURCE
#include "process_control.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#if defined(__linux__)
#include <sys/prctl.h>

int swarmdeck_forbid_inspection(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int swarmdeck_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}
#else
int swarmdeck_become_subreaper(void) {
    errno = ENOSYS;
    return -1;
}

int swarmdeck_forbid_inspection(void) {
    errno = ENOSYS;
    return -1;
}
#endif

int swarmdeck_copy_window_size(int from, int to) {
    struct winsize size;
    if (ioctl(from, TIOCGWINSZ, &size) != 0) return -1;
    return ioctl(to, TIOCSWINSZ, &size);
}

int swarmdeck_set_window_size(int fd, unsigned short cols, unsigned short rows) {
    struct winsize size = {0};
    size.ws_col = cols;
    size.ws_row = rows;
    return ioctl(fd, TIOCSWINSZ, &size);
}

int swarmdeck_spawn_close_from(posix_spawn_file_actions_t *actions, int fd) {
    return posix_spawn_file_actions_addclosefrom_np(actions, fd);
}

short swarmdeck_spawn_setsid_flag(void) {
    return POSIX_SPAWN_SETSID;
}

int swarmdeck_open_pty(char *name, size_t length) {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return -1;
    if (grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, name, length) != 0) {
        int saved = errno;
        close(master);
        errno = saved;
        return -1;
    }
    return master;
}

int swarmdeck_peer(int fd, int *pid, unsigned int *uid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    return 0;
}
