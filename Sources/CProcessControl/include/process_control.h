#ifndef SWARMDECK_PROCESS_CONTROL_H
#define SWARMDECK_PROCESS_CONTROL_H

#include <spawn.h>
#include <stddef.h>

/// prctl(PR_SET_DUMPABLE, 0): no process of the same user may ptrace this one or read its
/// /proc files (environ, mem). prctl is variadic, so Swift cannot call it directly.
/// Returns 0, or -1 with errno set (always -1 with ENOSYS where prctl does not exist).
int swarmdeck_forbid_inspection(void);

/// prctl(PR_SET_CHILD_SUBREAPER, 1): an orphan among this process's descendants (a daemon that
/// double-forked, a `setsid` child whose parent exited) is re-parented to this process instead
/// of init, so it stays a descendant that can be found and signalled.
/// Returns 0, or -1 with errno set.
int swarmdeck_become_subreaper(void);

/// Gives terminal `to` the window size of terminal `from` (TIOCGWINSZ, TIOCSWINSZ; ioctl is
/// variadic). Returns 0, or -1 with errno set.
int swarmdeck_copy_window_size(int from, int to);

/// Sets the window size of terminal `fd`. Returns 0, or -1 with errno set.
int swarmdeck_set_window_size(int fd, unsigned short cols, unsigned short rows);

/// A file action closing every descriptor from `fd` up (glibc's
/// posix_spawn_file_actions_addclosefrom_np): the child inherits nothing it was not given,
/// whatever a library opened without close-on-exec. Returns 0 or an error number.
int swarmdeck_spawn_close_from(posix_spawn_file_actions_t *actions, int fd);

/// posix_spawn's POSIX_SPAWN_SETSID (a GNU extension): the child starts a session of its own,
/// so a terminal it then opens becomes its controlling terminal.
short swarmdeck_spawn_setsid_flag(void);

/// A new pseudo-terminal: returns its master side (close-on-exec) and writes its slave side's
/// path into `name`; -1 with errno set on failure.
int swarmdeck_open_pty(char *name, size_t length);

/// The process and user at the other end of the connected UNIX socket `fd` (SO_PEERCRED, as
/// they were when it connected). Returns 0, or -1 with errno set.
int swarmdeck_peer(int fd, int *pid, unsigned int *uid);

#endif
