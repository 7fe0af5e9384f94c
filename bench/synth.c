/*
 * synth: a synthetic, kernel-shaped capture for the scale benchmark
 * (bench/scale) and the synthetic tests (tests/test_synthetic.py,
 * tests/test_synthetic_ept.py).
 *
 *   synth --events N [--seed S] [--vcpus V] [--isa svm|vmx] --out DIR
 *
 * writes DIR/trace/kernel (CTF 1.8 through libbabeltrace2: a source
 * component (synth_ctf.c) feeding sink.ctf.fs of the ctf plugin),
 * DIR/manifest.json and DIR/event-counts.txt.  Everything about it says
 * synthetic: the environment (tracer_name "mmureplay-synth", synthetic = 1,
 * hostname and trace_name "synthetic"), the manifest ("synthetic": {...},
 * cpu model "synthetic") and the stream file names.
 *
 * The layout is a lab capture's of a patched Linux 6.1 kernel (LTTng
 * kernel tracer): one stream per CPU with cpu_id in the packet context,
 * tid and procname as the common context, the monotonic clock at 1 GHz,
 * and the event classes the ingest reads (schemas/events.json) with
 * LTTng's ids, field names, sizes, signedness and display bases.  The lab
 * trace declares some ninety more classes (interrupts, timers, other
 * syscalls) that the ingest does not read; they are left out.
 *
 * The guest model (synth_model.c):
 *   - one memslot (kvm_memslot_change), page tables installed by the
 *     first fault under them;
 *   - rounds of a background snapshot (QEMU's userfaultfd write
 *     protection): the whole slot write-protected (one invalidation that
 *     zaps every leaf), then a walk unprotecting each page (one
 *     invalidation per page that zaps its leaf, if any); the guest reads
 *     pages before their unprotect (read-only leaves), writes to
 *     protected pages (the fault waits for the unprotect, then installs
 *     writable) and refaults unprotected pages;
 *   - between rounds, dirty logging: the slot's write-protection when it
 *     starts, fast page faults for writes to write-protected leaves, the
 *     slow path for absent ones, KVM_GET_DIRTY_LOG re-protecting the
 *     written pages, and the flag off again.
 *   - a second memslot of THP-backed code with NX huge pages
 *     (nx_huge_pages=Y): reads map 2M leaves, non-executable; an
 *     instruction fetch splits them (the 2M leaf zapped, an L1 table, a
 *     4K leaf), and the recovery worker (kvm-nx-lpage-re) wakes every
 *     NX_PERIOD_MS of trace time to take ceil(split / NX_RATIO) of the
 *     oldest split pages (begin, per page the table unlinked, its SP
 *     freed with its leaves, recover_page; one flush; end).
 * Every event follows the kernel's order for its path (patched
 * tracepoints: the notifier's start and end, the unmap decision after the
 * zaps, the remote TLB flush when something was zapped), and events are
 * strictly ordered in time, so the trace holds exactly the state the
 * model kept: the self-check (mmureplay fidelity) must pass on it.
 * Not made: races (a fault installing inside an open invalidation,
 * a fault waiting for a recovery batch's lock), lock waits, teardown,
 * eager splits, the collapse when dirty logging stops: the self-check's
 * exemptions and those rules stay unexercised here.  The same seed gives
 * the same events, counts and manifest; sink.ctf.fs draws the trace UUID
 * itself.
 *
 * The ISA (--isa, synth_isa.c, where the encodings are spelled out):
 * svm (the default) traces AMD SVM exits, NPF error codes and NPT SPTEs,
 * as the lab records; vmx traces the same guest as Intel VMX would: the
 * EPT-violation exit (isa 1, reason 48) with its exit qualification as
 * kvm_page_fault's error_code, EPT SPTEs, cpu.vendor GenuineIntel.  One
 * seed gives the same decisions, events and counts under both; only the
 * encoded values differ.  The vmx capture checks that the analyzer
 * decodes VMX/EPT as it decodes SVM/NPT; it is not evidence about Intel
 * hardware (the model is the same, and it was never run on one).
 *
 * That is what it is for; the counts it prints are true by construction
 * and checked against babeltrace2's CLI, not against a kernel.
 */
#define _GNU_SOURCE
#include "synth.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------
 * The manifest and the counts beside the trace (temp name + rename).
 */
static int file_commit(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int rc = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "w");
	if (!f)
		goto end;
	if (fputs(text, f) < 0) {
		fclose(f);
		goto end;
	}
	if (fclose(f) == 0 && rename(tmp, path) == 0)
		rc = 0;
end:
	if (rc < 0) {
		fprintf(stderr, "synth: %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
	return rc;
}

static int cmp_counts(const void *a, const void *b, void *arg)
{
	const uint64_t *c = arg;
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	if (c[x] != c[y])
		return c[x] < c[y] ? 1 : -1;
	return strcmp(synth_classes[x].name, synth_classes[y].name);
}

static int counts_write(const struct model_view *m, const char *dir)
{
	unsigned order[C_N], i;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return -1;
	for (i = 0; i < C_N; i++)
		order[i] = i;
	qsort_r(order, C_N, sizeof(order[0]), cmp_counts,
		(void *)m->counts);
	/* The babeltrace2 CLI's counts, as tests/data/<fixture>/ has. */
	for (i = 0; i < C_N; i++)
		if (m->counts[order[i]])
			fprintf(f, "%7" PRIu64 " %s:\n", m->counts[order[i]],
				synth_classes[order[i]].name);
	fclose(f);
	rc = file_commit(dir, "event-counts.txt", text);
	free(text);
	return rc;
}

static int manifest_write(const struct model_view *m, uint64_t seed,
			  const char *dir)
{
	const char *const *p;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return -1;
	fprintf(f,
		"{\n"
		"  \"manifest_version\": 1,\n"
		"  \"hostname\": \"synthetic\",\n"
		"  \"kernel_release\": \"6.1.192+\",\n"
		"  \"kernel_version\": \"synthetic: bench/synth, no kernel ran\",\n"
		"  \"cpu\": { \"vendor\": \"%s\", "
		"\"model\": \"synthetic\", \"count\": %u },\n"
		"  \"kvm\": {\n"
		"    \"params\": {\n"
		"      \"kvm.eager_page_split\": \"Y\",\n"
		"      \"kvm.nx_huge_pages\": \"Y\",\n"
		"      \"kvm.nx_huge_pages_recovery_period_ms\": \"%d\",\n"
		"      \"kvm.nx_huge_pages_recovery_ratio\": \"%d\",\n"
		"      \"kvm.nx_huge_pages_recovery_read_lock\": \"N\",\n"
		"      \"kvm.nx_huge_pages_recovery_skip_dirty\": \"N\",\n"
		"      \"kvm.perm_upgrade_skip_zap\": \"N\",\n"
		"      \"kvm.tdp_mmu\": \"Y\"",
		m->isa->cpu_vendor, m->ncpus, NX_PERIOD_MS, NX_RATIO);
	/* The vendor module's (synth_isa.c). */
	for (p = m->isa->params; *p; p += 2)
		fprintf(f, ",\n      \"%s\": \"%s\"", p[0], p[1]);
	fprintf(f,
		"\n"
		"    }\n"
		"  },\n"
		"  \"vms\": [],\n"
		"  \"workload\": \"synthetic: bgsnapshot rounds, dirty logging, "
		"NX huge page recovery\",\n"
		"  \"trace\": {\n"
		"    \"kernel_events\": [\"kvm_*\"],\n"
		"    \"missing_events\": [],\n"
		"    \"ust\": false,\n"
		"    \"discarded_events\": 0\n"
		"  },\n"
		"  \"synthetic\": {\n"
		"    \"generator\": \"bench/synth\",\n"
		"    \"seed\": %" PRIu64 ",\n"
		"    \"vcpus\": %u,\n"
		"    \"target_events\": %" PRIu64 ",\n"
		"    \"events\": %" PRIu64 ",\n"
		"    \"guest_pages\": %" PRIu64 ",\n"
		"    \"snapshot_rounds\": %u\n"
		"  }\n"
		"}\n",
		seed, m->vcpus, m->target, m->emitted, m->npages, m->rounds);
	fclose(f);
	rc = file_commit(dir, "manifest.json", text);
	free(text);
	return rc;
}

/* The partial trace of a failed run goes (its directory is flat). */
static void dir_remove(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* ---------------------------------------------------------------------
 * Command line.
 */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: synth --events N --out DIR [--seed S] [--vcpus V]\n"
		"             [--isa svm|vmx]\n"
		"\n"
		"Writes a synthetic capture (no kernel ran): a CTF trace with\n"
		"the layout of a patched Linux 6.1 LTTng kernel capture\n"
		"(DIR/trace/kernel), DIR/manifest.json and DIR/event-counts.txt,\n"
		"made by a guest model (background snapshot rounds, dirty\n"
		"logging, NX huge page recovery) that keeps the kernel's\n"
		"rules, so that `mmureplay\n"
		"fidelity` passes on it.  Named synthetic in its environment\n"
		"(tracer_name mmureplay-synth, synthetic = 1), manifest and\n"
		"stream files.  The same seed gives the same events, counts\n"
		"and manifest (sink.ctf.fs draws the trace UUID itself).\n"
		"\n"
		"  --events N   about N events (the last episode is finished;\n"
		"               1000 .. 10000000000)\n"
		"  --seed S     model seed (default 1)\n"
		"  --vcpus V    vCPUs, one CPU stream each, plus one for the\n"
		"               VMM's threads (1 .. 64, default 4)\n"
		"  --isa I      svm: AMD SVM exits and NPT SPTEs (default);\n"
		"               vmx: the same guest as Intel VMX with EPT\n"
		"               would trace it (same seed, same events and\n"
		"               counts; a check of the decoding, not of Intel\n"
		"               hardware)\n"
		"  --out DIR    output directory (created; must not hold a\n"
		"               trace already)\n"
		"  --help       this text\n"
		"\n"
		"Prints the number of events written.  Exit status (as\n"
		"mmureplay's): 0 written, 1 bad command line, 4 DIR cannot be\n"
		"written (nothing is left half-written), 5 internal error.\n");
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "events", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "vcpus", required_argument, NULL, 'v' },
		{ "isa", required_argument, NULL, 'i' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t events = 0, seed = 1, vcpus = 4;
	const char *out = NULL;
	char trace_dir[PATH_MAX], tmp_dir[PATH_MAX + 16], path[PATH_MAX + 16];
	enum synth_status st = SYNTH_ERR_USAGE;
	const struct synth_isa *isa = synth_isa_by_name("svm");
	struct model *m = NULL;
	struct model_view mv;
	struct stat sb;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_u64(optarg, 1000, 10000000000ULL, &events)) {
				fprintf(stderr, "synth: --events: %s: not an "
					"integer in 1000 .. 10000000000\n",
					optarg);
				return SYNTH_ERR_USAGE;
			}
			break;
		case 's':
			if (parse_u64(optarg, 0, UINT64_MAX, &seed)) {
				fprintf(stderr, "synth: --seed: %s: not an "
					"unsigned integer\n", optarg);
				return SYNTH_ERR_USAGE;
			}
			break;
		case 'v':
			if (parse_u64(optarg, 1, 64, &vcpus)) {
				fprintf(stderr, "synth: --vcpus: %s: not an "
					"integer in 1 .. 64\n", optarg);
				return SYNTH_ERR_USAGE;
			}
			break;
		case 'i':
			isa = synth_isa_by_name(optarg);
			if (!isa) {
				fprintf(stderr, "synth: --isa: %s: not svm or "
					"vmx\n", optarg);
				return SYNTH_ERR_USAGE;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return SYNTH_OK;
		default:
			usage(stderr);
			return SYNTH_ERR_USAGE;
		}
	}
	if (!events || !out || optind != argc) {
		usage(stderr);
		return SYNTH_ERR_USAGE;
	}
	if (snprintf(trace_dir, sizeof(trace_dir), "%s/trace/kernel", out) >=
	    (int)sizeof(trace_dir)) {
		fprintf(stderr, "synth: %s: path too long\n", out);
		return SYNTH_ERR_USAGE;
	}
	snprintf(path, sizeof(path), "%s/metadata", trace_dir);
	if (stat(path, &sb) == 0) {
		fprintf(stderr, "synth: %s: a trace is already there\n", out);
		return SYNTH_ERR_OUTPUT;
	}
	/* Written under a temporary name, renamed when complete. */
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/trace/.kernel.partial", out);
	dir_remove(tmp_dir);
	snprintf(path, sizeof(path), "%s/trace", out);
	if ((mkdir(out, 0777) < 0 && errno != EEXIST) ||
	    (mkdir(path, 0777) < 0 && errno != EEXIST)) {
		fprintf(stderr, "synth: %s: %s\n", path, strerror(errno));
		return SYNTH_ERR_OUTPUT;
	}
	st = SYNTH_ERR_INTERNAL;
	if (model_new(&m, events, seed, (unsigned)vcpus, isa) != MODEL_OK) {
		fprintf(stderr, "synth: out of memory\n");
		goto end;
	}
	st = synth_ctf_write(m, seed, tmp_dir);
	if (st != SYNTH_OK) {
		dir_remove(tmp_dir);
		goto end;
	}
	if (rename(tmp_dir, trace_dir) < 0) {
		fprintf(stderr, "synth: %s: %s\n", trace_dir, strerror(errno));
		dir_remove(tmp_dir);
		st = SYNTH_ERR_OUTPUT;
		goto end;
	}
	model_view(m, &mv);
	if (counts_write(&mv, out) < 0 || manifest_write(&mv, seed, out) < 0) {
		st = SYNTH_ERR_OUTPUT;
		goto end;
	}
	printf("%" PRIu64 "\n", mv.emitted);
end:
	model_free(m);
	return st;
}
