#ifndef SWARMDECK_HEAP_H
#define SWARMDECK_HEAP_H

#include <stddef.h>

/// Bytes the C allocator has handed out and not had back (glibc's mallinfo2: the arenas' bytes
/// in use plus mmap'd blocks): the live heap, as opposed to the resident set, which keeps what
/// was freed. 0 where the C library is not glibc (the gauge is then not set). glibc takes
/// each arena's lock in turn to count: call it per scrape, not per request.
size_t swarmdeck_heap_in_use(void);

#endif
