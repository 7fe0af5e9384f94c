/*
 * kvm-stats-sampler: emit KVM statistics as mmureplay:stats_sample LTTng
 * events at a fixed period, for VMs this tool can reach.
 *
 *   kvm-stats-sampler --debugfs [--period-ms N] [--count N]
 *       every VM under /sys/kernel/debug/kvm (PID-FD directories; vm id =
 *       the VMM's pid), reading the per-VM stat files; a period with no
 *       VM emits nothing (started before the VMM, it waits for it);
 *   kvm-stats-sampler --own-vm [--period-ms N] [--count N]
 *       creates an idle VM with one vCPU and samples it through
 *       KVM_GET_STATS_FD: checks that the host's KVM exposes the
 *       statistics the capture needs (and what they are called).
 *
 * Run it with LTTNG_UST_ALLOW_BLOCKING=1 under a session with the
 * mmureplay provider enabled (capture/mmureplay-capture does both).
 * Exit status: 0 ok, 1 usage, 2 nothing to sample (no debugfs, no KVM).
 */
#include "kvm_stats.h"
#include "mmureplay_tp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define DEBUGFS_KVM "/sys/kernel/debug/kvm"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int sample_debugfs(void)
{
	const char *const *name;
	char path[512];
	struct dirent *de;
	unsigned long long v;
	int n = 0;
	DIR *d = opendir(DEBUGFS_KVM);
	FILE *f;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		unsigned int pid;

		if (sscanf(de->d_name, "%u-", &pid) != 1)
			continue;
		for (name = kvm_stats_default_names; *name; name++) {
			snprintf(path, sizeof(path), DEBUGFS_KVM "/%s/%s",
				 de->d_name, *name);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fscanf(f, "%llu", &v) == 1) {
				lttng_ust_tracepoint(mmureplay, stats_sample,
						     pid, *name, v);
				n++;
			}
			fclose(f);
		}
	}
	closedir(d);
	/* No VM right now is not an error: VMs come and go while it runs;
	 * only a missing debugfs directory is. */
	return n;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: kvm-stats-sampler (--debugfs | --own-vm) "
		"[--period-ms N] [--count N]\n"
		"Emit KVM statistics as mmureplay:stats_sample LTTng-UST "
		"events every N ms\n(default 100), N times (default: until "
		"killed).\nExit status: 0 ok, 1 usage, 2 nothing to sample.\n");
}

int main(int argc, char **argv)
{
	struct kvm_stats_reader *vm_stats = NULL, *vcpu_stats = NULL;
	long period = 100, count = -1, i;
	int mode = 0, kvm = -1, vm = -1, vcpu = -1, rc = 2, a;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--debugfs") == 0)
			mode = 1;
		else if (strcmp(argv[a], "--own-vm") == 0)
			mode = 2;
		else if (strcmp(argv[a], "--period-ms") == 0 && a + 1 < argc)
			period = atol(argv[++a]);
		else if (strcmp(argv[a], "--count") == 0 && a + 1 < argc)
			count = atol(argv[++a]);
		else if (strcmp(argv[a], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 1;
		}
	}
	if (!mode || period <= 0) {
		usage(stderr);
		return 1;
	}
	if (mode == 2) {
		kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
		vm = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
		vcpu = vm < 0 ? -1 : ioctl(vm, KVM_CREATE_VCPU, 0);
		vm_stats = vm < 0 ? NULL : kvm_stats_open(vm, NULL);
		vcpu_stats = vcpu < 0 ? NULL : kvm_stats_open(vcpu, NULL);
		if (!vm_stats || !vcpu_stats) {
			fprintf(stderr, "kvm-stats-sampler: /dev/kvm: cannot "
				"read VM statistics: %s\n", strerror(errno));
			goto end;
		}
	}
	for (i = 0; count < 0 || i < count; i++) {
		if (i)
			sleep_ms(period);
		if (mode == 1 && sample_debugfs() < 0) {
			fprintf(stderr, "kvm-stats-sampler: " DEBUGFS_KVM
				": not readable (debugfs not mounted, or no "
				"KVM)\n");
			goto end;
		}
		if (mode == 2 && (kvm_stats_sample(vm_stats, 0) < 0 ||
				  kvm_stats_sample(vcpu_stats, 0) < 0)) {
			fprintf(stderr, "kvm-stats-sampler: reading "
				"statistics: %s\n", strerror(errno));
			goto end;
		}
	}
	if (mode == 2)
		for (a = 0; a < kvm_stats_count(vm_stats); a++)
			printf("vm %s %llu\n", kvm_stats_name(vm_stats, a),
			       (unsigned long long)kvm_stats_value(vm_stats, a));
	if (mode == 2)
		for (a = 0; a < kvm_stats_count(vcpu_stats); a++)
			printf("vcpu %s %llu\n", kvm_stats_name(vcpu_stats, a),
			       (unsigned long long)kvm_stats_value(vcpu_stats,
								   a));
	rc = 0;
end:
	kvm_stats_close(vm_stats);
	kvm_stats_close(vcpu_stats);
	if (vcpu >= 0)
		close(vcpu);
	if (vm >= 0)
		close(vm);
	if (kvm >= 0)
		close(kvm);
	return rc;
}
