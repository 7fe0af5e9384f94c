/*
 * A replay session: one capture replayed under several policies, the
 * way `mmureplay replay` and bench/replay_bench.c run them.
 *
 * The first pass (scan.h) does not depend on the policy: a session makes
 * it once, when it opens, and each replay_session_run() is one pass of
 * the engine under one policy.  The run whose policy is the one the
 * capture was recorded with (capture_info.recorded) is the self-check.
 *
 * Invariants: between open and close the session owns its source and
 * the scan; a run's result belongs to the caller (replay_result_free()),
 * also after a failed run.
 */
#ifndef MMUREPLAY_REPLAY_SESSION_H
#define MMUREPLAY_REPLAY_SESSION_H

#include "replay/capture_info.h"
#include "replay/engine.h"
#include "replay/scan.h"
#include "replay/source.h"
#include "replay/vm_attr.h"

#include <sqlite3.h>

enum replay_session_input {
	REPLAY_INPUT_ANY,       /* the replay stream when current, else
				 * a temporary one made from the canonical
				 * tables (source_open_spooled()) */
	REPLAY_INPUT_TABLES,    /* always the tables (bench, tests) */
};

struct replay_session {
	struct source *src;
	/* With ci->vm set: the pass that gives kernel threads' work its VM
	 * (vm_attr.h), and the source narrowed to that VM's events. */
	struct vm_attr attr;
	int have_attr;
	/* The attribution the results report: attr, or a replay_vms'. */
	const struct vm_attr *kattr;
	struct scan scan;
	struct replay_opts opts;
	const struct policy *recorded;
};

/*
 * Opens db's events (from input) as the session's source and makes the
 * first pass.  ci holds the capture's facts (the caller may have
 * overridden some, e.g. the NX ratio) and must outlive the session,
 * which keeps a pointer to its worker list; with ci->vm set, the session
 * replays that VM's events alone (one pass more first, vm_attr.h);
 * rules_off holds the model
 * rules a test switched off (1 << enum replay_rule), else 0.  Returns
 * REPLAY_OK, and the caller closes the session with
 * replay_session_close().  On error returns REPLAY_ERR_SOURCE (the
 * events could not be opened or read) or REPLAY_ERR_NOMEM; the session
 * then holds nothing.
 */
enum replay_status replay_session_open(struct replay_session *s,
				       sqlite3 *db,
				       const struct capture_info *ci,
				       replay_rules_t rules_off,
				       enum replay_session_input input);
/*
 * Replays the capture under pol, one pass of the engine, into *res
 * (the self-check when pol is the recorded policy).  Returns REPLAY_OK,
 * and the caller frees *res with replay_result_free().  On error
 * returns what replay_run_scanned() does; *res then holds no memory,
 * and the session stays open either way.
 */
enum replay_status replay_session_run(struct replay_session *s,
				      const struct policy *pol,
				      struct replay_result *res);
/* Frees the session's source and scan.  Harmless on a session whose
 * open failed, or one closed already. */
void replay_session_close(struct replay_session *s);

/*
 * A capture of several VMs replayed VM by VM at the cost of its events,
 * not N times their cost: one pass gives kernel threads' work a VM
 * (vm_attr.h) and one splits the events by VM (source_split_vms()); then
 * each VM's session opens over its own events alone.
 */
struct replay_vms {
	struct vm_attr attr;
	struct source **src;            /* [nvms]; a session takes its own */
	int nvms;
};

/*
 * Makes v for db's ci->nvms VMs from input.  Returns REPLAY_OK, and
 * the caller closes v with replay_vms_close(); REPLAY_ERR_SOURCE when
 * the events cannot be read (a corrupt event: logged), REPLAY_ERR_SPOOL
 * when a temporary stream cannot be made (the caller may then narrow
 * one session per VM instead, replay_session_open() with ci->vm),
 * REPLAY_ERR_NOMEM.  v holds nothing after an error.
 */
enum replay_status replay_vms_open(struct replay_vms *v, sqlite3 *db,
				   const struct capture_info *ci,
				   replay_rules_t rules_off,
				   enum replay_session_input input);
/*
 * Opens s over VM vm's events of v (1..v->nvms), which it takes: each
 * VM's session opens once.  ci as for replay_session_open() (its vm is
 * not read).  Returns what replay_session_open() does.
 */
enum replay_status replay_session_open_vm(struct replay_session *s,
					  struct replay_vms *v, int vm,
					  const struct capture_info *ci,
					  replay_rules_t rules_off);
void replay_vms_close(struct replay_vms *v);

#endif
