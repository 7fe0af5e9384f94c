-- mmureplay capture database, schema version 5 (2 added the fault
-- table's decoded access and present columns; 3 the VM of each event:
-- table vm, column vm of every canonical table, thread.pid, and
-- stats_sample's sampler id renamed sampler_vm; 4 replay_vm_metric and
-- replay_kept; 5 the patched kernel's VM identity: table vm_change,
-- column kvm of vm, notifier and nx_recovery, vm.destroyed_seq/_ts).
--
-- One file holds one capture: every trace of it (kernel and UST), its
-- streams, the canonical events of schemas/events.json, the count of every
-- raw event name seen, and the events the tracer reports as lost.
--
-- Invariants kept by ingest (analyze/ingest) and relied on by everything
-- that reads the file:
--   * seq is the position of the event in the muxed, time-ordered stream
--     of the whole capture, unique across all event tables; replay merges
--     tables by seq, never by ts (ties in ts are common).
--   * ts is nanoseconds from the capture's time base (meta 'ts_base_ns',
--     nanoseconds from the Unix epoch), so it stays small on disk.
--   * Unsigned 64-bit trace fields (SPTEs, addresses, error codes) are
--     stored as the signed integer with the same bit pattern: reading them
--     back with sqlite3_column_int64() and a cast to uint64_t is exact,
--     and printf('%x', v) in SQL shows the original value.
--   * A missing optional field is NULL, never 0.
--   * The file is complete when meta 'complete' is 1; meta 'truncated' is 1
--     when the trace ended early and the events after the break are absent.
--   * vm is the VM an event belongs to (table vm; analyze/ingest/vms.h):
--     NULL when ingest cannot tell, and meta 'vm_unattributed:REASON'
--     counts those rows per reason; meta 'vm_attribution' is 'none' when
--     the trace gives no process (no pid context) and so no VM at all.
--   * meta 'rows:TABLE' is the row count of canonical table TABLE as ingest
--     wrote it; triggers rows_stale_TABLE_INSERT / _DELETE delete the key
--     when rows are added or removed, and readers trust the key only while
--     the DELETE trigger exists (analyze/db/db.h, db_table_count()).

PRAGMA user_version = 5;

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value
) WITHOUT ROWID;

CREATE TABLE trace (
	id                 INTEGER PRIMARY KEY,
	path               TEXT NOT NULL,   -- relative to the TRACE argument
	hostname           TEXT,
	domain             TEXT,            -- 'kernel' or 'ust'
	sysname            TEXT,
	kernel_release     TEXT,
	kernel_version     TEXT,
	tracer_name        TEXT,
	tracer_version     TEXT,
	trace_name         TEXT,
	creation_datetime  TEXT
);

CREATE TABLE stream (
	id        INTEGER PRIMARY KEY,
	trace_id  INTEGER NOT NULL REFERENCES trace(id),
	name      TEXT,
	events    INTEGER NOT NULL DEFAULT 0
);

-- Every raw event name seen, mapped to a canonical event or not.
CREATE TABLE raw_event (
	id         INTEGER PRIMARY KEY,
	name       TEXT NOT NULL UNIQUE,
	count      INTEGER NOT NULL,
	canonical  TEXT,                    -- NULL: counted only
	note       TEXT                     -- why a known name was not mapped
);

-- Discarded events / packets reported by the tracer (babeltrace2
-- discarded-events and discarded-packets messages), and a stream's lost
-- beginning (its first packet is not its tracer's first: an LTTng
-- snapshot, a trace cut at its start): kind 'packets', count the first
-- packet's number, begin_ts NULL, end_ts the stream's first event.
CREATE TABLE lost (
	id         INTEGER PRIMARY KEY,
	stream_id  INTEGER NOT NULL REFERENCES stream(id),
	kind       TEXT NOT NULL CHECK (kind IN ('events', 'packets')),
	begin_ts   INTEGER,
	end_ts     INTEGER,
	count      INTEGER                  -- NULL: the tracer did not say
);

CREATE TABLE thread (
	tid       INTEGER NOT NULL,
	procname  TEXT NOT NULL,
	first_seq INTEGER NOT NULL,
	pid       INTEGER,                  -- NULL: the trace does not say
	PRIMARY KEY (tid, procname)
) WITHOUT ROWID;

-- One row per VM: a successful KVM_CREATE_VM (its process, the fd it
-- returned, the seq and ts of its return, or of the patched kernel's
-- kvm_vm_create), or a VM that ran before the capture began (a vCPU ran
-- with no KVM_CREATE_VM traced: fd, created_seq and created_ts NULL).
-- kvm is the struct kvm address the patched kernel's events name it by
-- (NULL on stock kernels, or for a VM from before the capture that no
-- event of its own process named); destroyed_seq/_ts are those of its
-- kvm_vm_create's twin kvm_vm_destroy (patched; NULL while it lives, or on
-- stock kernels).  id is the vm column of the event tables.
CREATE TABLE vm (
	id            INTEGER PRIMARY KEY,
	pid           INTEGER NOT NULL,
	fd            INTEGER,
	created_seq   INTEGER,
	created_ts    INTEGER,
	procname      TEXT,
	kvm           INTEGER,
	destroyed_seq INTEGER,
	destroyed_ts  INTEGER
);

-- Canonical event tables.  Every one starts with seq, ts, cpu, tid, vm;
-- the columns after those are named in schemas/events.json.

CREATE TABLE spte_change (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	as_id INTEGER, gfn INTEGER, level INTEGER,
	old_spte INTEGER, new_spte INTEGER
);

-- error_code is what kvm_page_fault traced: on SVM the #NPF error code
-- (PFERR bits), on VMX the EPT-violation exit qualification.  access
-- ('read', 'write' or 'fetch') and present (1: the entry was present, a
-- permission fault) are decoded from it by the capture's exit ISA, as
-- KVM decodes it (analyze/model/fault.h); NULL when the capture does not
-- say its ISA (no kvm_exit with isa, no manifest CPU vendor).
CREATE TABLE fault (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	vcpu INTEGER, gpa INTEGER, error_code INTEGER, rip INTEGER,
	access TEXT CHECK (access IN ('read', 'write', 'fetch')),
	present INTEGER
);

CREATE TABLE spte_request (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	gfn INTEGER, pfn INTEGER, level INTEGER
);

CREATE TABLE spte_set (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	gfn INTEGER, spte INTEGER, level INTEGER
);

CREATE TABLE fast_fault (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	vcpu INTEGER, gpa INTEGER, error_code INTEGER,
	old_spte INTEGER, new_spte INTEGER, ret INTEGER
);

CREATE TABLE sp_alloc (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	gfn INTEGER, role INTEGER, created INTEGER
);

CREATE TABLE sp_free (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	gfn INTEGER, role INTEGER
);

CREATE TABLE huge_split (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	gfn INTEGER, spte INTEGER, level INTEGER, errno INTEGER
);

-- phase: 0 = start, 1 = end.  event (enum mmu_notifier_event: 2 is
-- PROTECTION_VMA), flags (the range's raw flags), blockable and
-- perm_upgrade are NULL on stock kernels (kvm_unmap_hva_range); kvm (the
-- VM's struct kvm address) is NULL there and on patched kernels from
-- before the series named the VM.
CREATE TABLE notifier (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	phase INTEGER NOT NULL, hva_start INTEGER, hva_end INTEGER,
	event INTEGER, flags INTEGER, blockable INTEGER, perm_upgrade INTEGER,
	kvm INTEGER
);

-- What kvm_unmap_gfn_range() did (patched): decision 0 = zap,
-- 1 = skipped (permission upgrade kept the SPTEs).  gfn_end exclusive.
CREATE TABLE unmap_decision (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	as_id INTEGER, slot INTEGER, gfn_start INTEGER, gfn_end INTEGER,
	event INTEGER, perm_upgrade INTEGER, decision INTEGER, flush INTEGER
);

-- Remote TLB flush (patched): pages 0 = the whole VM.
CREATE TABLE tlb_flush (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	gfn_start INTEGER, pages INTEGER, ranged INTEGER
);

-- NX huge page recovery (patched).  phase: 0 = begin, 1 = end, 2 = one
-- page (action 0 zapped, 1 skipped dirty-logged, 2 raced).  lock_mode:
-- 0 = mmu_lock for write, 1 = for read.  kvm: as in notifier (begin and
-- end only).
CREATE TABLE nx_recovery (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	phase INTEGER NOT NULL, lock_mode INTEGER, pages INTEGER,
	to_zap INTEGER, ratio INTEGER, zapped INTEGER, skipped_dirty INTEGER,
	raced INTEGER, gfn INTEGER, level INTEGER, action INTEGER,
	kvm INTEGER
);

-- A VM created or destroyed (patched: kvm_vm_create, kvm_vm_destroy).
-- change: 0 = created (in KVM_CREATE_VM, before its fd is installed),
-- 1 = destroyed (at the end of kvm_destroy_vm(), after its teardown).
-- kvm: the struct kvm address the series' other events name the VM by;
-- pid and fd: the creating process and the VM's fd (creation only).
CREATE TABLE vm_change (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	change INTEGER NOT NULL, kvm INTEGER, pid INTEGER, fd INTEGER
);

-- A vCPU fault that waited for mmu_lock (patched; only when its trylock
-- failed).
CREATE TABLE lock_wait (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	vcpu INTEGER, gfn INTEGER, wait_ns INTEGER, error_code INTEGER,
	lock_mode INTEGER
);

-- Generic lock contention (lock:contention_begin/end). phase as notifier.
CREATE TABLE lock_contention (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	phase INTEGER NOT NULL, lock_addr INTEGER, flags INTEGER, ret INTEGER
);

-- Memslot change (patched).  change: 0 = create, 1 = delete, 2 = move,
-- 3 = flags only; dirty_logging is the state after the change.
-- change 4: the slot as LTTng's state dump listed it when the session
-- started (lttng_statedump_kvm_memslot, kernel-series/lttng-modules);
-- old_flags = new_flags = its flags.
CREATE TABLE memslot (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	as_id INTEGER, slot INTEGER, change INTEGER, base_gfn INTEGER,
	npages INTEGER, hva INTEGER, old_flags INTEGER, new_flags INTEGER,
	dirty_logging INTEGER
);

CREATE TABLE vcpu_exit (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	vcpu INTEGER, exit_reason INTEGER, info1 INTEGER, info2 INTEGER,
	isa INTEGER                       -- 1 = VMX (EPT), 2 = SVM (NPT)
);

CREATE TABLE vcpu_entry (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	vcpu INTEGER
);

-- Syscalls that mark workload phases (uffd-wp ioctls, mprotect, madvise,
-- KVM_SET_USER_MEMORY_REGION).  raw_id names the raw event; a0..a2 are
-- its first arguments in the order of schemas/events.json.
CREATE TABLE syscall (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	raw_id INTEGER NOT NULL, a0 INTEGER, a1 INTEGER, a2 INTEGER
);

CREATE TABLE stats_sample (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	sampler_vm INTEGER, stat TEXT, value INTEGER
);

CREATE TABLE latency_sample (
	seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cpu INTEGER, tid INTEGER,
	vm INTEGER,
	probe INTEGER, ns INTEGER, gfn INTEGER
);

-- The replay stream (analyze/replay/stream.h) is derived data, not part
-- of what ingest writes: the first `mmureplay replay` of a DB adds
--   replay_stream (chunk INTEGER PRIMARY KEY, first_seq, events, data BLOB)
-- (the canonical events in seq order, packed), meta keys
-- replay_stream_format / replay_stream_of / replay_stream_events, and
-- triggers replay_stream_stale_* that drop the format key when a table
-- it was made from is edited.

-- Replay results (mmureplay replay): one run per policy, replaced when
-- the policy is replayed again.  self_check_ok is the fidelity of the
-- recorded policy when the run was made: what-if figures of a run with
-- self_check_ok = 0 are not to be presented.
CREATE TABLE replay_run (
	id             INTEGER PRIMARY KEY,
	policy         TEXT NOT NULL UNIQUE,
	created        TEXT NOT NULL,
	self_check_ok  INTEGER NOT NULL,
	events         INTEGER NOT NULL,
	duration_s     REAL NOT NULL,
	memslots       TEXT,            -- measured / inferred / unknown
	perm_upgrade   TEXT,
	dirty_logging  TEXT,
	lock_waits     TEXT,
	-- why the policy cannot act on the recorded host (its figures are
	-- then the recorded run's by construction); NULL when it can
	not_applicable TEXT
);

CREATE TABLE replay_metric (
	run_id  INTEGER NOT NULL REFERENCES replay_run(id),
	name    TEXT NOT NULL,
	value   REAL NOT NULL,
	PRIMARY KEY (run_id, name)
) WITHOUT ROWID;

-- A capture of several VMs: each VM's figures under each policy, the VMs
-- replayed apart (table vm's id); a policy's figures over its VMs sum to
-- its run's.  ord is the policy's place in the replay (0: the recorded
-- one); self_check_ok is the VM's own verdict.  A policy that cannot act
-- on a VM has no rows for it (the VM is left as recorded).  replay --vm
-- writes its VM's rows only, never replay_run.
CREATE TABLE replay_vm_metric (
	policy         TEXT NOT NULL,
	vm             INTEGER NOT NULL,
	ord            INTEGER NOT NULL,
	self_check_ok  INTEGER NOT NULL,
	name           TEXT NOT NULL,
	value          REAL NOT NULL,
	PRIMARY KEY (policy, vm, name)
) WITHOUT ROWID;

-- Which sources a run's policy touches: the threads whose contexts held
-- the zaps it keeps (replay --json zaps_kept_by_thread), the first 16;
-- the rest is the run's figure zaps_kept_by_other_threads.
CREATE TABLE replay_kept (
	run_id  INTEGER NOT NULL REFERENCES replay_run(id),
	tid     INTEGER NOT NULL,
	thread  TEXT NOT NULL,
	zaps    INTEGER NOT NULL,
	PRIMARY KEY (run_id, tid)
) WITHOUT ROWID;

CREATE TABLE replay_series (
	run_id        INTEGER NOT NULL REFERENCES replay_run(id),
	second        INTEGER NOT NULL,
	faults        INTEGER NOT NULL,
	zaps          INTEGER NOT NULL,
	flushes       INTEGER NOT NULL,
	lock_wait_ns  INTEGER NOT NULL,
	PRIMARY KEY (run_id, second)
) WITHOUT ROWID;

CREATE TABLE replay_mismatch (
	run_id     INTEGER NOT NULL REFERENCES replay_run(id),
	kind       TEXT NOT NULL,
	seq        INTEGER,
	ts         INTEGER,
	gfn        INTEGER,
	predicted  INTEGER,
	observed   INTEGER
);
