/*
 * Instantiates the "mmureplay" LTTng-UST provider (mmureplay_tp.h).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "mmureplay_tp.h"
