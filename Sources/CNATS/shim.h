#ifndef SWARMDECK_CNATS_SHIM_H
#define SWARMDECK_CNATS_SHIM_H
#include <nats/nats.h>
#endif
