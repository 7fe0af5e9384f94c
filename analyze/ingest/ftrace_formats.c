/*
 * Print formats of the stock kernel's KVM events and their matcher (see
 * ftrace_formats.h).
 *
 * Pattern conversions:
 *   {f:u} {f:d}    decimal, unsigned / signed
 *   {f:x}          hex, "0x" optional (%llx, %#llx, 0x%016llx)
 *   {_:w}          anything up to the next literal (not kept)
 *   {f:exit}       kvm_exit's reason name, SVM or VMX, or 0x<hex> for
 *                  one the kernel has no name for; sets isa too
 *   {f:pferr}      page fault error code flags P|W|U|RSVD|F (+ 0x<hex>)
 *   {f:acc}        MMU page access "wux" with '-' for a clear bit
 *   {f:opt=TEXT}   1 when TEXT is printed here, else 0
 *   {f:alt=A|B|C}  the index of the alternative printed
 * Fields named with a leading '.' are parts a derived field is built
 * from (the MMU page role); they are kept too.
 */
#include "ingest/ftrace_formats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ftrace_sym {
	unsigned long v;
	const char *n;
};

/* The names of exit reasons: the SVM_EXIT_REASONS and VMX_EXIT_REASONS
 * tables of the 6.1 uapi headers (asm/svm.h, asm/vmx.h). */
static const struct ftrace_sym svm_exit[] = {
	{ 0x0, "read_cr0" },
	{ 0x2, "read_cr2" },
	{ 0x3, "read_cr3" },
	{ 0x4, "read_cr4" },
	{ 0x8, "read_cr8" },
	{ 0x10, "write_cr0" },
	{ 0x12, "write_cr2" },
	{ 0x13, "write_cr3" },
	{ 0x14, "write_cr4" },
	{ 0x18, "write_cr8" },
	{ 0x20, "read_dr0" },
	{ 0x21, "read_dr1" },
	{ 0x22, "read_dr2" },
	{ 0x23, "read_dr3" },
	{ 0x24, "read_dr4" },
	{ 0x25, "read_dr5" },
	{ 0x26, "read_dr6" },
	{ 0x27, "read_dr7" },
	{ 0x30, "write_dr0" },
	{ 0x31, "write_dr1" },
	{ 0x32, "write_dr2" },
	{ 0x33, "write_dr3" },
	{ 0x34, "write_dr4" },
	{ 0x35, "write_dr5" },
	{ 0x36, "write_dr6" },
	{ 0x37, "write_dr7" },
	{ 0x40, "DE excp" },
	{ 0x41, "DB excp" },
	{ 0x43, "BP excp" },
	{ 0x44, "OF excp" },
	{ 0x45, "BR excp" },
	{ 0x46, "UD excp" },
	{ 0x47, "NM excp" },
	{ 0x48, "DF excp" },
	{ 0x4a, "TS excp" },
	{ 0x4b, "NP excp" },
	{ 0x4c, "SS excp" },
	{ 0x4d, "GP excp" },
	{ 0x4e, "PF excp" },
	{ 0x50, "MF excp" },
	{ 0x51, "AC excp" },
	{ 0x52, "MC excp" },
	{ 0x53, "XF excp" },
	{ 0x60, "interrupt" },
	{ 0x61, "nmi" },
	{ 0x62, "smi" },
	{ 0x63, "init" },
	{ 0x64, "vintr" },
	{ 0x65, "cr0_sel_write" },
	{ 0x66, "read_idtr" },
	{ 0x67, "read_gdtr" },
	{ 0x68, "read_ldtr" },
	{ 0x69, "read_rt" },
	{ 0x6a, "write_idtr" },
	{ 0x6b, "write_gdtr" },
	{ 0x6c, "write_ldtr" },
	{ 0x6d, "write_rt" },
	{ 0x6e, "rdtsc" },
	{ 0x6f, "rdpmc" },
	{ 0x70, "pushf" },
	{ 0x71, "popf" },
	{ 0x72, "cpuid" },
	{ 0x73, "rsm" },
	{ 0x74, "iret" },
	{ 0x75, "swint" },
	{ 0x76, "invd" },
	{ 0x77, "pause" },
	{ 0x78, "hlt" },
	{ 0x79, "invlpg" },
	{ 0x7a, "invlpga" },
	{ 0x7b, "io" },
	{ 0x7c, "msr" },
	{ 0x7d, "task_switch" },
	{ 0x7e, "ferr_freeze" },
	{ 0x7f, "shutdown" },
	{ 0x80, "vmrun" },
	{ 0x81, "hypercall" },
	{ 0x82, "vmload" },
	{ 0x83, "vmsave" },
	{ 0x84, "stgi" },
	{ 0x85, "clgi" },
	{ 0x86, "skinit" },
	{ 0x87, "rdtscp" },
	{ 0x88, "icebp" },
	{ 0x89, "wbinvd" },
	{ 0x8a, "monitor" },
	{ 0x8b, "mwait" },
	{ 0x8d, "xsetbv" },
	{ 0x8f, "write_efer_trap" },
	{ 0x90, "write_cr0_trap" },
	{ 0x94, "write_cr4_trap" },
	{ 0x98, "write_cr8_trap" },
	{ 0xa2, "invpcid" },
	{ 0x400, "npf" },
	{ 0x401, "avic_incomplete_ipi" },
	{ 0x402, "avic_unaccelerated_access" },
	{ 0x403, "vmgexit" },
	{ 0x80000001, "vmgexit_mmio_read" },
	{ 0x80000002, "vmgexit_mmio_write" },
	{ 0x80000003, "vmgexit_nmi_complete" },
	{ 0x80000004, "vmgexit_ap_hlt_loop" },
	{ 0x80000005, "vmgexit_ap_jump_table" },
	{ 0x80000010, "vmgexit_page_state_change" },
	{ 0x80000011, "vmgexit_guest_request" },
	{ 0x80000012, "vmgexit_ext_guest_request" },
	{ 0x80000013, "vmgexit_ap_creation" },
	{ 0x8000fffd, "vmgexit_hypervisor_feature" },
	{ 0xffffffffffffffff, "invalid_guest_state" },
};

static const struct ftrace_sym vmx_exit[] = {
	{ 0, "EXCEPTION_NMI" },
	{ 1, "EXTERNAL_INTERRUPT" },
	{ 2, "TRIPLE_FAULT" },
	{ 3, "INIT_SIGNAL" },
	{ 4, "SIPI_SIGNAL" },
	{ 7, "INTERRUPT_WINDOW" },
	{ 8, "NMI_WINDOW" },
	{ 9, "TASK_SWITCH" },
	{ 10, "CPUID" },
	{ 12, "HLT" },
	{ 13, "INVD" },
	{ 14, "INVLPG" },
	{ 15, "RDPMC" },
	{ 16, "RDTSC" },
	{ 18, "VMCALL" },
	{ 19, "VMCLEAR" },
	{ 20, "VMLAUNCH" },
	{ 21, "VMPTRLD" },
	{ 22, "VMPTRST" },
	{ 23, "VMREAD" },
	{ 24, "VMRESUME" },
	{ 25, "VMWRITE" },
	{ 26, "VMOFF" },
	{ 27, "VMON" },
	{ 28, "CR_ACCESS" },
	{ 29, "DR_ACCESS" },
	{ 30, "IO_INSTRUCTION" },
	{ 31, "MSR_READ" },
	{ 32, "MSR_WRITE" },
	{ 33, "INVALID_STATE" },
	{ 34, "MSR_LOAD_FAIL" },
	{ 36, "MWAIT_INSTRUCTION" },
	{ 37, "MONITOR_TRAP_FLAG" },
	{ 39, "MONITOR_INSTRUCTION" },
	{ 40, "PAUSE_INSTRUCTION" },
	{ 41, "MCE_DURING_VMENTRY" },
	{ 43, "TPR_BELOW_THRESHOLD" },
	{ 44, "APIC_ACCESS" },
	{ 45, "EOI_INDUCED" },
	{ 46, "GDTR_IDTR" },
	{ 47, "LDTR_TR" },
	{ 48, "EPT_VIOLATION" },
	{ 49, "EPT_MISCONFIG" },
	{ 50, "INVEPT" },
	{ 51, "RDTSCP" },
	{ 52, "PREEMPTION_TIMER" },
	{ 53, "INVVPID" },
	{ 54, "WBINVD" },
	{ 55, "XSETBV" },
	{ 56, "APIC_WRITE" },
	{ 57, "RDRAND" },
	{ 58, "INVPCID" },
	{ 59, "VMFUNC" },
	{ 60, "ENCLS" },
	{ 61, "RDSEED" },
	{ 62, "PML_FULL" },
	{ 63, "XSAVES" },
	{ 64, "XRSTORS" },
	{ 67, "UMWAIT" },
	{ 68, "TPAUSE" },
	{ 74, "BUS_LOCK" },
	{ 75, "NOTIFY" },
};

#define MMU_PAGE_PATTERN "sp gen {mmu_valid_gen:u} gfn {gfn:x} " \
	"l{.level:u} {.has_4_byte_gpte:alt=8|4}-byte q{.quadrant:u}" \
	"{.direct:opt= direct} {.access:acc}{.invalid:opt= invalid} " \
	"{.no_efer_nx:opt=!}nxe {.ad_disabled:opt=!}ad root " \
	"{root_count:u} {unsync:alt=sync|unsync}"
#define MMU_PAGE_LOSSY "role: only the bits TP_printk shows (level, " \
	"has_4_byte_gpte, quadrant, direct, access, invalid, efer_nx, " \
	"ad_disabled); cr0_wp, smep/smap_andnot_wp, guest_mode, " \
	"passthrough and smm read as 0"

#define KVM_EXIT_PLUGIN_LOSSY "trace-cmd's kvm plugin format: exit_reason's " \
	"flag bits, vcpu_id, intr_info, error_code not printed"

/* An event may have several formats (the kernel's, older kernels',
 * trace-cmd's plugin's), one after the other: the reader takes the first
 * its first line follows (ftrace_format_next()). */
static const struct ftrace_format formats[] = {
	{ "kvm_exit", "kvm", NULL, FTRACE_FMT_PATTERN,
	  "vcpu {vcpu_id:u} reason {exit_reason:exit} rip 0x{guest_rip:x} "
	  "info1 0x{info1:x} info2 0x{info2:x} intr_info 0x{intr_info:x} "
	  "error_code 0x{error_code:x}",
	  "exit_reason: a VMX reason's flag bits are not read", 0 },
	/* trace-cmd report prints kvm_exit through libtraceevent's kvm
	 * plugin (the kernel's own text only with the plugin off). */
	{ "kvm_exit", "kvm", NULL, FTRACE_FMT_PATTERN,
	  "reason {exit_reason:exit} rip 0x{guest_rip:x} "
	  "info {info1:x} {info2:x}", KVM_EXIT_PLUGIN_LOSSY, 0 },
	{ "kvm_exit", "kvm", NULL, FTRACE_FMT_PATTERN,
	  "reason {exit_reason:exit} rip 0x{guest_rip:x}",
	  KVM_EXIT_PLUGIN_LOSSY "; info1, info2 (not printed)", 0 },
	{ "kvm_entry", "kvm", NULL, FTRACE_FMT_PATTERN,
	  "vcpu {vcpu_id:u}, rip 0x{rip:x}"
	  "{immediate_exit:opt=[immediate exit]}", NULL, 0 },
	{ "kvm_page_fault", "kvm", NULL, FTRACE_FMT_PATTERN,
	  "vcpu {vcpu_id:u} rip 0x{guest_rip:x} address 0x{fault_address:x} "
	  "error_code 0x{error_code:x}", NULL, 0 },
	/* Kernels before vcpu and rip were added to it (4.x, 5.x). */
	{ "kvm_page_fault", "kvm", NULL, FTRACE_FMT_PATTERN,
	  "address {fault_address:x} error_code {error_code:x}",
	  "vcpu_id, guest_rip: this kernel's kvm_page_fault does not print "
	  "them", 0 },
	{ "kvm_unmap_hva_range", "kvm", NULL, FTRACE_FMT_PATTERN,
	  "mmu notifier unmap range: {start:x} -- {end:x}", NULL, 0 },
	{ "kvm_tdp_mmu_spte_changed", "kvmmmu", NULL, FTRACE_FMT_PATTERN,
	  "as id {as_id:d} gfn {gfn:x} level {level:d} old_spte {old_spte:x} "
	  "new_spte {new_spte:x}", NULL, 0 },
	{ "kvm_mmu_spte_requested", "kvmmmu", NULL, FTRACE_FMT_PATTERN,
	  "gfn {gfn:x} pfn {pfn:x} level {level:d}", NULL, 0 },
	{ "kvm_mmu_set_spte", "kvmmmu", NULL, FTRACE_FMT_PATTERN,
	  "gfn {gfn:x} spte {spte:x} ({_:w}) level {level:d} at {sptep:x}",
	  NULL, 0 },
	{ "kvm_mmu_split_huge_page", "kvmmmu", NULL, FTRACE_FMT_PATTERN,
	  "gfn {gfn:x} spte {spte:x} level {level:d} errno {errno:d}",
	  NULL, 0 },
	{ "kvm_mmu_get_page", "kvmmmu", NULL, FTRACE_FMT_PATTERN,
	  MMU_PAGE_PATTERN " {created:alt=existing|new}", MMU_PAGE_LOSSY,
	  1 },
	{ "kvm_mmu_prepare_zap_page", "kvmmmu", NULL, FTRACE_FMT_PATTERN,
	  MMU_PAGE_PATTERN, MMU_PAGE_LOSSY, 1 },
	{ "fast_page_fault", "kvmmmu", NULL, FTRACE_FMT_PATTERN,
	  "vcpu {vcpu_id:d} gva {cr2_or_gpa:x} error_code {error_code:pferr} "
	  "sptep {_:w} old {old_spte:x} new {new_spte:x} "
	  "spurious {.spurious:d} fixed {.fixed:d}",
	  "ret: only RET_PF_FIXED and RET_PF_SPURIOUS are printed, other "
	  "values read as NULL", 0 },
	{ "tracing_mark_write", "ftrace", "print", FTRACE_FMT_NONE, NULL,
	  NULL, 0 },
};

/* Syscall events print under their own names: "sys_ioctl(...)" in the
 * kernel's text, "sys_enter_ioctl: ..." in trace-cmd report. */
static const struct ftrace_format sys_formats[] = {
#define SYS(name, kind) { name, "syscalls", NULL, kind, NULL, NULL, 0 }
	SYS("sys_enter_ioctl", FTRACE_FMT_SYS_ENTER),
	SYS("sys_exit_ioctl", FTRACE_FMT_SYS_EXIT),
	SYS("sys_enter_mprotect", FTRACE_FMT_SYS_ENTER),
	SYS("sys_exit_mprotect", FTRACE_FMT_SYS_EXIT),
	SYS("sys_enter_madvise", FTRACE_FMT_SYS_ENTER),
	SYS("sys_exit_madvise", FTRACE_FMT_SYS_EXIT),
#undef SYS
};

#define N_ELEM(a) (sizeof(a) / sizeof((a)[0]))

const struct ftrace_format *ftrace_format_find(const char *name)
{
	size_t i;

	for (i = 0; i < N_ELEM(formats); i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	for (i = 0; i < N_ELEM(sys_formats); i++)
		if (strcmp(sys_formats[i].name, name) == 0)
			return &sys_formats[i];
	return NULL;
}

const struct ftrace_format *ftrace_format_next(const struct ftrace_format *f)
{
	size_t i;

	for (i = 0; i + 1 < N_ELEM(formats); i++)
		if (f == &formats[i])
			return strcmp(formats[i + 1].name, f->name) == 0 ?
				&formats[i + 1] : NULL;
	return NULL;
}

int ftrace_values_find(const struct ftrace_values *vals, const char *name)
{
	int i;

	for (i = 0; i < vals->n; i++)
		if (strcmp(vals->name[i], name) == 0)
			return i;
	return -1;
}

static int value_add(struct ftrace_values *vals, const char *name,
		     size_t len, int64_t v, int present, int is_signed)
{
	int i = vals->n;

	if (i == FTRACE_MAX_FIELDS || len >= sizeof(vals->name[0]))
		return -1;
	memcpy(vals->name[i], name, len);
	vals->name[i][len] = '\0';
	vals->v[i] = v;
	vals->present[i] = (uint8_t)present;
	vals->is_signed[i] = (uint8_t)is_signed;
	vals->n++;
	return 0;
}

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		(c >= 'A' && c <= 'F');
}

/* Hex digits after an optional "0x"; the end, or NULL. */
static const char *parse_hex(const char *s, int64_t *v)
{
	const char *p = s;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && is_hex(p[2]))
		p += 2;
	if (!is_hex(*p))
		return NULL;
	*v = (int64_t)strtoull(p, (char **)&s, 16);
	return s;
}

static const char *parse_dec(const char *s, int64_t *v, int is_signed)
{
	const char *p = s + (is_signed && *s == '-');

	if (*p < '0' || *p > '9')
		return NULL;
	*v = is_signed ? (int64_t)strtoll(s, (char **)&p, 10) :
		(int64_t)strtoull(s, (char **)&p, 10);
	return p;
}

/* The end of the token: where lit (len n) next occurs, or the end of s
 * when the pattern has no more literal text. */
static const char *token_end(const char *s, const char *lit, size_t n)
{
	const char *e;

	if (n == 0)
		return s + strlen(s);
	for (e = s; *e; e++)
		if (strncmp(e, lit, n) == 0)
			return e;
	return NULL;
}

static int sym_find(const struct ftrace_sym *t, size_t n, const char *s,
		    size_t len, int64_t *v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(t[i].n) == len && strncmp(t[i].n, s, len) == 0) {
			*v = (int64_t)t[i].v;
			return 0;
		}
	return -1;
}

/* kvm_exit's reason (KVM_ISA_VMX 1, KVM_ISA_SVM 2, as the isa field). */
static int conv_exit(const char *s, size_t len, int64_t *v, int64_t *isa)
{
	const char *end;

	if (sym_find(svm_exit, N_ELEM(svm_exit), s, len, v) == 0) {
		*isa = 2;
		return 0;
	}
	if (sym_find(vmx_exit, N_ELEM(vmx_exit), s, len, v) == 0) {
		*isa = 1;
		return 0;
	}
	/* __print_symbolic prints a value without a name as 0x<hex>. */
	end = parse_hex(s, v);
	*isa = -1;
	return end == s + len && len > 2 && s[1] == 'x' ? 0 : -1;
}

static int conv_pferr(const char *s, size_t len, int64_t *v)
{
	static const struct ftrace_sym flags[] = {
		{ 1, "P" }, { 2, "W" }, { 4, "U" }, { 8, "RSVD" },
		{ 0x10, "F" },
	};
	const char *e = s + len, *t;
	int64_t bit;

	*v = 0;
	while (s < e) {
		for (t = s; t < e && *t != '|'; t++)
			;
		if (sym_find(flags, N_ELEM(flags), s, (size_t)(t - s),
			     &bit) == 0)
			*v |= bit;
		else if (parse_hex(s, &bit) == t)
			*v |= bit;
		else
			return -1;
		s = t < e ? t + 1 : t;
	}
	return 0;
}

static int conv_acc(const char *s, int64_t *v)
{
	static const char bits[3] = { 'w', 'u', 'x' };
	int i;

	/* access_str[] = "---", "--x", "w--", ...: bit 0 x, 1 w, 2 u. */
	*v = 0;
	for (i = 0; i < 3; i++) {
		if (s[i] == bits[i])
			*v |= i == 0 ? 2 : i == 1 ? 4 : 1;
		else if (s[i] != '-')
			return -1;
	}
	return 0;
}

/* Build what the kernel's rules allow from the printed parts. */
static int derive(const struct ftrace_format *f, struct ftrace_values *vals)
{
	static const struct { const char *part; int shift; int neg; } role[] = {
		{ ".level", 0, 0 }, { ".has_4_byte_gpte", 4, 0 },
		{ ".quadrant", 5, 0 }, { ".direct", 7, 0 },
		{ ".access", 8, 0 }, { ".invalid", 11, 0 },
		{ ".no_efer_nx", 12, 1 }, { ".ad_disabled", 16, 0 },
	};
	int64_t w = 0;
	size_t i;
	int k, sp, fx;

	if (strncmp(f->name, "kvm_mmu_", 8) == 0 &&
	    ftrace_values_find(vals, ".level") >= 0) {
		for (i = 0; i < N_ELEM(role); i++) {
			k = ftrace_values_find(vals, role[i].part);
			if (k < 0)
				return -1;
			w |= (role[i].neg ? !vals->v[k] : vals->v[k]) <<
				role[i].shift;
		}
		return value_add(vals, "role", 4, w, 1, 0);
	}
	if (strcmp(f->name, "fast_page_fault") == 0) {
		sp = ftrace_values_find(vals, ".spurious");
		fx = ftrace_values_find(vals, ".fixed");
		if (sp < 0 || fx < 0)
			return -1;
		/* RET_PF_FIXED 4, RET_PF_SPURIOUS 5 (mmu_internal.h). */
		return value_add(vals, "ret", 3, vals->v[fx] ? 4 :
				 vals->v[sp] ? 5 : 0,
				 vals->v[fx] || vals->v[sp], 1);
	}
	return 0;
}

int ftrace_format_match(const struct ftrace_format *f, const char *msg,
			struct ftrace_values *vals)
{
	const char *p = f->pattern, *s = msg, *name, *conv, *close, *lit, *e;
	size_t nlen, clen, litlen, n;
	int64_t v, isa;
	int present, sgn;

	vals->n = 0;
	if (f->kind != FTRACE_FMT_PATTERN)
		return f->kind == FTRACE_FMT_NONE ? 0 :
			ftrace_syscall_match(f->kind, msg, vals);
	while (*p) {
		if (*p != '{') {
			if (*s++ != *p++)
				return -1;
			continue;
		}
		name = p + 1;
		conv = strchr(name, ':');
		close = strchr(name, '}');
		if (!conv || !close || conv > close)
			return -1;
		nlen = (size_t)(conv - name);
		conv++;
		clen = (size_t)(close - conv);
		p = close + 1;
		for (lit = p, litlen = 0; lit[litlen] && lit[litlen] != '{';
		     litlen++)
			;
		v = 0;
		present = 1;
		sgn = 0;
		e = NULL;
		if (clen == 1 && (*conv == 'u' || *conv == 'd')) {
			sgn = *conv == 'd';
			e = parse_dec(s, &v, sgn);
		} else if (clen == 1 && *conv == 'x') {
			e = parse_hex(s, &v);
		} else if (clen == 1 && *conv == 'w') {
			e = token_end(s, lit, litlen);
			present = 0;
		} else if (clen == 4 && strncmp(conv, "exit", 4) == 0) {
			e = token_end(s, lit, litlen);
			if (!e || conv_exit(s, (size_t)(e - s), &v, &isa) < 0 ||
			    value_add(vals, "isa", 3, isa, isa >= 0, 0) < 0)
				return -1;
		} else if (clen == 5 && strncmp(conv, "pferr", 5) == 0) {
			e = token_end(s, lit, litlen);
			if (e && conv_pferr(s, (size_t)(e - s), &v) < 0)
				return -1;
		} else if (clen == 3 && strncmp(conv, "acc", 3) == 0) {
			if (strlen(s) < 3 || conv_acc(s, &v) < 0)
				return -1;
			e = s + 3;
		} else if (clen > 4 && strncmp(conv, "opt=", 4) == 0) {
			n = clen - 4;
			v = strncmp(s, conv + 4, n) == 0;
			e = v ? s + n : s;
		} else if (clen > 4 && strncmp(conv, "alt=", 4) == 0) {
			const char *a = conv + 4, *ae;

			for (v = 0; a < close; v++, a = ae + 1) {
				for (ae = a; ae < close && *ae != '|'; ae++)
					;
				n = (size_t)(ae - a);
				if (strncmp(s, a, n) == 0 &&
				    (litlen == 0 ||
				     strncmp(s + n, lit, litlen) == 0)) {
					e = s + n;
					break;
				}
			}
		} else {
			return -1;
		}
		if (!e)
			return -1;
		s = e;
		if (!(nlen == 1 && *name == '_') &&
		    value_add(vals, name, nlen, v, present, sgn) < 0)
			return -1;
	}
	if (*s)
		return -1;
	return derive(f, vals);
}

int ftrace_syscall_match(enum ftrace_fmt_kind kind, const char *msg,
			 struct ftrace_values *vals)
{
	const char *s = msg, *n;
	int64_t v;

	vals->n = 0;
	if (kind == FTRACE_FMT_SYS_EXIT) {
		s = parse_hex(s, &v);
		if (!s || *s)
			return -1;
		return value_add(vals, "ret", 3, v, 1, 1);
	}
	while (*s && *s != ')') {
		for (n = s; (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')
			     || *s == '_'; s++)
			;
		if (s == n || s[0] != ':' || s[1] != ' ')
			return -1;
		if (value_add(vals, n, (size_t)(s - n), 0, 1, 0) < 0)
			return -1;
		s = parse_hex(s + 2, &vals->v[vals->n - 1]);
		if (!s)
			return -1;
		if (s[0] == ',' && s[1] == ' ')
			s += 2;
		else if (*s && *s != ')')
			return -1;
	}
	return (*s == ')' && s[1] == '\0') || *s == '\0' ? 0 : -1;
}

/* Whether f's pattern reads field name (len n) as hex. */
static int field_is_hex(const struct ftrace_format *f, const char *name,
			size_t n)
{
	const char *p;

	if (f->kind != FTRACE_FMT_PATTERN || f->raw_decimal)
		return 0;
	for (p = strchr(f->pattern, '{'); p; p = strchr(p + 1, '{'))
		if (strncmp(p + 1, name, n) == 0 && strncmp(p + 1 + n, ":x}",
							     3) == 0)
			return 1;
	return 0;
}

int ftrace_raw_match(const struct ftrace_format *f, const char *msg,
		     struct ftrace_values *vals)
{
	const char *s = msg, *n, *e;
	int64_t v = 0;
	int sgn, num;

	vals->n = 0;
	if (!f || f->kind == FTRACE_FMT_NONE)
		return -1;
	while (*s == ' ')
		s++;
	while (*s) {
		for (n = s; (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')
			     || (*s >= '0' && *s <= '9') || *s == '_'; s++)
			;
		if (s == n || *s != '=')
			return -1;
		s++;
		sgn = *s == '-';
		e = (s[0] == '0' && s[1] == 'x') ||
			field_is_hex(f, n, (size_t)(s - 1 - n)) ?
			parse_hex(s, &v) : parse_dec(s, &v, sgn);
		num = e && (*e == '\0' || *e == ' ');
		/* A value that is not a number (a string field): absent. */
		if (!num)
			for (e = s; *e && *e != ' '; e++)
				;
		if (value_add(vals, n, (size_t)(s - 1 - n), num ? v : 0, num,
			      sgn) < 0)
			return -1;
		s = e;
		while (*s == ' ')
			s++;
	}
	return vals->n ? 0 : -1;
}
