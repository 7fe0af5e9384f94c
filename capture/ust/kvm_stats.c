/*
 * KVM binary statistics -> mmureplay:stats_sample (see kvm_stats.h).
 *
 * File layout (Documentation/virt/kvm/api.rst, "KVM_GET_STATS_FD"): a
 * header, then num_desc descriptors of sizeof(desc) + name_size bytes,
 * then the data block; statistic d's values are size u64s at
 * data_offset + d.offset.  Only single-value statistics are sampled.
 */
#include "kvm_stats.h"

#include "mmureplay_tp.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

const char *const kvm_stats_default_names[] = {
	"pf_taken", "pf_fixed", "pf_emulate", "pf_spurious", "pf_fast",
	"pf_guest", "remote_tlb_flush", "remote_tlb_flush_requests",
	"pages_4k", "pages_2m", "pages_1g", "nx_lpage_splits",
	"mmu_shadow_zapped", "mmu_recycled", "mmu_pte_write",
	"exits", "halt_exits", NULL,
};

struct kvm_stats_item {
	char name[64];
	uint32_t offset;        /* in the data block */
	uint64_t value;
};

struct kvm_stats_reader {
	int fd;
	uint32_t data_offset, data_size;
	unsigned char *data;
	struct kvm_stats_item *items;
	int n;
};

static int wanted(const char *name, const char *const *names)
{
	for (; *names; names++)
		if (strcmp(*names, name) == 0)
			return 1;
	return 0;
}

struct kvm_stats_reader *kvm_stats_open(int kvm_obj_fd,
					const char *const *names)
{
	struct kvm_stats_reader *r = calloc(1, sizeof(*r));
	struct kvm_stats_header h;
	struct kvm_stats_desc *d = NULL;
	size_t dsize;
	uint32_t i, end;
	int err = ENOMEM;

	if (!r)
		goto fail;
	r->fd = ioctl(kvm_obj_fd, KVM_GET_STATS_FD, NULL);
	if (r->fd < 0) {
		err = errno;
		goto fail;
	}
	err = EIO;
	if (pread(r->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		goto fail;
	dsize = sizeof(*d) + h.name_size;
	d = malloc(dsize);
	r->items = calloc(h.num_desc ? h.num_desc : 1, sizeof(*r->items));
	if (!d || !r->items) {
		err = ENOMEM;
		goto fail;
	}
	r->data_offset = h.data_offset;
	for (i = 0; i < h.num_desc; i++) {
		if (pread(r->fd, d, dsize, (off_t)(h.desc_offset + i * dsize))
		    != (ssize_t)dsize)
			goto fail;
		d->name[h.name_size - 1] = '\0';
		end = d->offset + (uint32_t)d->size * 8;
		if (end > r->data_size)
			r->data_size = end;
		if (d->size != 1 || !wanted(d->name, names ? names :
					    kvm_stats_default_names))
			continue;
		snprintf(r->items[r->n].name, sizeof(r->items[0].name), "%s",
			 d->name);
		r->items[r->n++].offset = d->offset;
	}
	r->data = malloc(r->data_size ? r->data_size : 1);
	if (!r->data) {
		err = ENOMEM;
		goto fail;
	}
	free(d);
	return r;
fail:
	free(d);
	kvm_stats_close(r);
	errno = err;
	return NULL;
}

int kvm_stats_count(const struct kvm_stats_reader *r)
{
	return r->n;
}

int kvm_stats_sample(struct kvm_stats_reader *r, uint32_t vm)
{
	int i;

	if (pread(r->fd, r->data, r->data_size, r->data_offset) !=
	    (ssize_t)r->data_size)
		return -1;
	for (i = 0; i < r->n; i++) {
		memcpy(&r->items[i].value, r->data + r->items[i].offset,
		       sizeof(uint64_t));
		lttng_ust_tracepoint(mmureplay, stats_sample, vm,
				     r->items[i].name, r->items[i].value);
	}
	return r->n;
}

uint64_t kvm_stats_value(const struct kvm_stats_reader *r, int i)
{
	return r->items[i].value;
}

const char *kvm_stats_name(const struct kvm_stats_reader *r, int i)
{
	return r->items[i].name;
}

void kvm_stats_close(struct kvm_stats_reader *r)
{
	if (!r)
		return;
	if (r->fd > 0)
		close(r->fd);
	free(r->items);
	free(r->data);
	free(r);
}
