/*
 * Sampling KVM's binary statistics (KVM_GET_STATS_FD, Linux >= 5.14) into
 * the mmureplay:stats_sample LTTng-UST event.
 *
 * A VMM opens one reader per VM fd and per vCPU fd it owns and calls
 * kvm_stats_sample() at a fixed period; every u64 statistic whose name is
 * in the wanted list (pf_taken, pf_fixed, remote_tlb_flush, pages_4k,
 * pages_2m, pages_1g, nx_lpage_splits, ...) becomes one event.  The
 * descriptors are read once; each sample is one pread of the data block.
 */
#ifndef MMUREPLAY_KVM_STATS_H
#define MMUREPLAY_KVM_STATS_H

#include <stdint.h>

struct kvm_stats_reader;

/* The statistics sampled when no list is given (NULL-terminated). */
extern const char *const kvm_stats_default_names[];

/*
 * Reader over the stats of a VM or vCPU fd.  names: NULL-terminated list
 * (NULL: kvm_stats_default_names).  Returns NULL and sets errno when
 * KVM_GET_STATS_FD or reading the descriptors fails.
 */
struct kvm_stats_reader *kvm_stats_open(int kvm_obj_fd,
					const char *const *names);
/* Number of statistics this reader samples. */
int kvm_stats_count(const struct kvm_stats_reader *r);
/* Read the current values and emit one stats_sample per statistic for
 * VM id vm; returns the number emitted, or -1 (errno set). */
int kvm_stats_sample(struct kvm_stats_reader *r, uint32_t vm);
/* Value of statistic i as last sampled, and its name. */
uint64_t kvm_stats_value(const struct kvm_stats_reader *r, int i);
const char *kvm_stats_name(const struct kvm_stats_reader *r, int i);
void kvm_stats_close(struct kvm_stats_reader *r);

#endif
