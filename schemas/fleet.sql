-- mmureplay fleet database, schema version 1 (mmureplay merge; read by
-- mmureplay fleet-report and by users' SQL).
--
-- One file holds the analyses of many captures: one shard each
-- (mmureplay analyze, schemas/shard.schema.json).  Invariants kept by
-- merge (analyze/fleet/merge.c):
--   * shard_doc holds each merged shard's shard.json verbatim, one row
--     per capture ID; every other table is derived from those rows
--     alone, so merge rebuilds the file from shard_doc and the shards it
--     is given, in ID order: the same shards give the same rows (and the
--     same bytes), in whatever order and however often they are merged.
--   * Of two shards of one ID the better status wins (ok, partial,
--     check_failed, cannot, failed), then the smaller text.
--   * A capture that failed is a row of capture with its status, stage
--     and error, and nothing else.
--   * vm 0 in figure is the capture as a whole; other values are table
--     vm's ids of that capture's DB.
--   * series sums, per policy and UTC second, the per-second series of
--     every capture with a verified run of the policy; policy
--     'recorded' sums each capture's recorded policy (verified or not).

PRAGMA user_version = 1;

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value
) WITHOUT ROWID;

CREATE TABLE shard_doc (
	id    TEXT PRIMARY KEY,
	json  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE capture (
	id               TEXT PRIMARY KEY,
	status           TEXT NOT NULL,   -- ok partial check_failed cannot failed
	exit_code        INTEGER NOT NULL,
	stage            TEXT,            -- where a failure stopped
	error            TEXT,            -- its first error line
	host             TEXT,            -- the label given, else the trace's
	trace_host       TEXT,
	sources          TEXT NOT NULL,   -- the inputs, one per line
	start_s          INTEGER,         -- UTC seconds of the first event
	duration_s       REAL,
	events           INTEGER,
	lost_events      INTEGER,
	truncated        INTEGER,
	kernel_release   TEXT,
	fault_isa        TEXT,
	recorded_policy  TEXT,
	self_check_ok    INTEGER,         -- NULL: never reached
	check_reason     TEXT
) WITHOUT ROWID;

CREATE TABLE capture_label (
	capture  TEXT NOT NULL REFERENCES capture(id),
	key      TEXT NOT NULL,
	value    TEXT NOT NULL,
	PRIMARY KEY (capture, key)
) WITHOUT ROWID;

CREATE TABLE capture_vm (
	capture        TEXT NOT NULL REFERENCES capture(id),
	vm             INTEGER NOT NULL,
	pid            INTEGER,
	procname       TEXT,
	label          TEXT,
	self_check_ok  INTEGER,           -- the VM's own verdict, if replayed apart
	PRIMARY KEY (capture, vm)
) WITHOUT ROWID;

CREATE TABLE policy_run (
	capture         TEXT NOT NULL REFERENCES capture(id),
	policy          TEXT NOT NULL,
	recorded        INTEGER NOT NULL,
	verified        INTEGER NOT NULL,
	not_applicable  TEXT,
	sweep_kind      TEXT,             -- nx-ratio / nx-period, or NULL
	sweep_value     REAL,
	sweep_factor    REAL,             -- over the recorded value
	-- what each figure is: predicted, restated, not_modelled, one_sided
	kind_faults        TEXT,
	kind_leaf_zaps     TEXT,
	kind_tlb_flushes   TEXT,
	kind_lock_wait_ms  TEXT,
	PRIMARY KEY (capture, policy)
) WITHOUT ROWID;

CREATE TABLE figure (
	capture  TEXT NOT NULL REFERENCES capture(id),
	vm       INTEGER NOT NULL,
	policy   TEXT NOT NULL,
	name     TEXT NOT NULL,           -- replay_metric's names
	value    REAL NOT NULL,
	PRIMARY KEY (capture, vm, policy, name)
) WITHOUT ROWID;

CREATE TABLE series (
	policy        TEXT NOT NULL,
	second        INTEGER NOT NULL,   -- UTC
	captures      INTEGER NOT NULL,
	faults        INTEGER NOT NULL,
	zaps          INTEGER NOT NULL,
	flushes       INTEGER NOT NULL,
	lock_wait_ns  INTEGER NOT NULL,
	PRIMARY KEY (policy, second)
) WITHOUT ROWID;

-- One row per capture, VM and policy: the figures a fleet compares.
CREATE VIEW whatif AS
SELECT capture, vm, policy,
       max(CASE name WHEN 'faults' THEN value END) AS faults,
       max(CASE name WHEN 'leaf_zaps' THEN value END) AS leaf_zaps,
       max(CASE name WHEN 'tlb_flushes' THEN value END) AS tlb_flushes,
       max(CASE name WHEN 'lock_wait_ms' THEN value END) AS lock_wait_ms
FROM figure GROUP BY capture, vm, policy;
