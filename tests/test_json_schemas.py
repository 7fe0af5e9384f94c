"""Every JSON output of every fixture against its schema (schemas/*.schema.json,
draft 2020-12, Debian's python3-jsonschema), and proof the schemas are
not vacuous.

usage: test_json_schemas.py MMUREPLAY SCHEMAS_DIR DATA_DIR WORK_DIR

Checked:
  - summary's ts_base_ns is the DB's, to the nanosecond (a double
    would round an epoch time in ns);
  - each schema is a valid draft 2020-12 schema with no duplicate key,
    names its output ("schema": "mmureplay-NAME", schema_version) and
    describes every key it declares;
  - every fixture in DATA_DIR is ingested (the tracecmd and perf
    fixtures' trace.dat, tracefs text and perf CTF too) and summary,
    fidelity, replay and spikes --json (default and --threshold-us) of
    each DB validate; so do the fixture's manifest.json and the copy
    ingest stores in the DB (under --sanitize: every eighth fixture and
    those the shapes below need).  A source that cannot replay (exit 7)
    writes no JSON at all;
  - compare --json on the two A/B pairs, one and two runs a side, and
    spikes --against;
  - the shapes the fixtures alone do not give: a failed self-check of a
    real capture (a knob-on capture replayed as baseline, and a model
    rule switched off: mismatches listed), and replay of a DB edited to
    lose 20 leaf zaps (withheld, then --force: unverified); a sweep
    policy (nx-ratio=N); each must have been seen, so a fixture change
    that stops giving one fails here instead of silently testing less;
  - negative checks on real outputs: every key removed (but the few the
    schemas declare optional, listed in OPTIONAL), every scalar given
    another JSON type, and an unknown key added to every object (but the
    two open maps keyed by raw event name) must each fail validation.
What it cannot catch: a value of the right type and range that is wrong
(the other tests check figures); keys of kvm_counters_vs_trace items and
lost records, which no fixture has (their schema is read, not run).
"""
import copy
import json
import lzma
import os
import re
import shutil
import sqlite3
import sys
import tarfile

import jsonschema
from jsonschema import Draft202012Validator

from mmrtest import (check, damage_leaf_zaps, db_rows, finish, fresh_dir,
                     run, sliced, trace_fixtures)

mmr, schemas_dir, data, work = sys.argv[1:5]
fresh_dir(work)
NAMES = ("summary", "fidelity", "replay", "spikes", "compare")
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError("duplicate keys %s" % sorted(dup))
    return dict(pairs)


schemas = {}
for name in NAMES + ("manifest",):
    path = os.path.join(schemas_dir, name + ".schema.json")
    with open(path) as f:
        schemas[name] = json.load(f, object_pairs_hook=no_duplicates)
    Draft202012Validator.check_schema(schemas[name])
    check(schemas[name].get("$schema") == DRAFT, "%s: draft 2020-12" % name)

# Cross-file references ($ref urn:mmureplay:fidelity#...): the newer
# library takes a registry, Debian 12's a resolver with a store.
try:
    from referencing import Registry, Resource
    registry = Registry().with_resources(
        [(s["$id"], Resource.from_contents(s)) for s in schemas.values()])

    def validator(name):
        return Draft202012Validator(schemas[name], registry=registry)
except ImportError:
    store = {s["$id"]: s for s in schemas.values()}

    def validator(name):
        return Draft202012Validator(
            schemas[name], resolver=jsonschema.RefResolver.from_schema(
                schemas[name], store=store))
validators = {n: validator(n) for n in schemas}


def errors(name, doc):
    return ["%s: %s" % ("/".join(map(str, e.absolute_path)), e.message[:200])
            for e in validators[name].iter_errors(doc)]


def resolve(schema, node):
    """A $ref's target inside the schemas (for descriptions)."""
    ref = node.get("$ref", "")
    if not ref:
        return node
    base, _, pointer = ref.partition("#")
    target = next(s for s in schemas.values() if s["$id"] == base) \
        if base else schema
    for part in pointer.strip("/").split("/"):
        target = target[part]
    return target


def described(name, schema, node, where):
    """Every key a schema declares says what it is."""
    if isinstance(node, dict):
        for key, sub in node.get("properties", {}).items():
            check("description" in sub or "description" in resolve(schema, sub),
                  "%s: %s/%s has a description" % (name, where, key))
        for key, sub in node.items():
            # Conditions restate keys described where they are declared.
            if key not in ("allOf", "if", "then", "else"):
                described(name, schema, sub, where + "/" + key)
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            described(name, schema, sub, "%s/%d" % (where, i))


for name in NAMES:
    props = schemas[name]["properties"]
    check(props["schema"] == {"const": "mmureplay-" + name,
                              "description": "Names this schema."},
          "%s: names its output" % name)
    v = props["schema_version"].get("const")
    check(isinstance(v, int) and v >= 1, "%s: schema_version" % name)
for name in schemas:
    described(name, schemas[name], schemas[name], "")

seen = set()            # the shapes the run must have exercised
docs = {}               # a real document of each shape, for the negatives


def validate(name, doc, what):
    errs = errors(name, doc)
    check(not errs, "%s: %s schema: %s" % (what, name, errs[:5]))
    check(doc.get("schema") == "mmureplay-" + name and
          doc.get("schema_version") ==
          schemas[name]["properties"]["schema_version"]["const"],
          "%s: names schema %s and its version" % (what, name))


def output(args, what, codes=(0,)):
    r = run([mmr] + args)
    check(r.returncode in codes, "%s: exit %d, want %s: %s"
          % (what, r.returncode, codes, r.stderr.strip()[:300]))
    try:
        return r.returncode, json.loads(r.stdout) if r.stdout else None
    except ValueError as e:
        check(False, "%s: not JSON: %s" % (what, e))
        return r.returncode, None


def note_shapes(name, doc):
    if name == "summary":
        if doc["latency"]["probes"]:
            seen.add("summary probes")
            docs.setdefault("summary", doc)
        if doc["unknown"]:
            seen.add("summary unknown")
            docs.setdefault("summary unknown", doc)
    sc = doc.get("self_check", doc) if name in ("fidelity", "replay") else {}
    if sc.get("upgrade_inference"):
        seen.add("upgrade inference")
    if name == "fidelity" and sc["mismatches"]:
        seen.add("fidelity mismatches")
        docs.setdefault("fidelity", doc)
    if name == "replay":
        if doc["withheld"]:
            seen.add("replay withheld")
            docs.setdefault("replay withheld", doc)
        elif not doc["self_check"]["ok"]:
            seen.add("replay unverified")
            docs.setdefault("replay unverified", doc)
        else:
            docs.setdefault("replay", doc)
        if any("not_modelled" in p for p in doc["policies"].values()):
            seen.add("not_modelled")
        if any(k.startswith("nx-ratio=") for k in doc["policies"]):
            seen.add("sweep policy")
    if name == "spikes":
        if doc["top"]:
            seen.add("spikes top")
            docs.setdefault("spikes", doc)
        if isinstance(doc["threshold_ns"], int):
            seen.add("spikes threshold")


def all_outputs(db, what):
    """summary, fidelity, replay, spikes --json of one DB, validated."""
    _, s = output(["summary", db, "--json"], what + " summary")
    if s:
        validate("summary", s, what + " summary")
        note_shapes("summary", s)
        # An epoch time in ns is past a double's 2^53: exact digits.
        base = db_rows(db, "SELECT value FROM meta WHERE key = 'ts_base_ns'")
        check(type(s["ts_base_ns"]) is int and
              s["ts_base_ns"] == int(base[0][0]),
              "%s summary: ts_base_ns %r, the DB's %s"
              % (what, s["ts_base_ns"], base[0][0]))
    replayable = s and s["basis"]["replay"] == "measured"
    for name, args in (("fidelity", ["fidelity"]), ("replay", ["replay"])):
        rc, doc = output(args + [db, "--json"], "%s %s" % (what, name),
                         (0, 6) if replayable else (7,))
        check(replayable or doc is None,
              "%s %s: no JSON when the source cannot replay" % (what, name))
        if doc:
            validate(name, doc, "%s %s" % (what, name))
            check((rc == 0) == doc.get("ok", doc.get("self_check", {})
                                       .get("ok")),
                  "%s %s: exit %d with ok %s" % (what, name, rc,
                                                 doc.get("ok")))
            note_shapes(name, doc)
    for extra in ([], ["--threshold-us", "500", "--top", "64"]):
        _, doc = output(["spikes", db, "--json"] + extra, what + " spikes")
        if doc:
            validate("spikes", doc, what + " spikes " + " ".join(extra))
            note_shapes("spikes", doc)
    stored = db_rows(db, "SELECT value FROM meta WHERE key = 'manifest'")
    if stored:
        errs = errors("manifest", json.loads(stored[0][0]))
        check(not errs, "%s: stored manifest: %s" % (what, errs[:5]))


# 1. Every fixture, every input it holds.  In a slice (the sanitizers:
# every eighth fixture; CI's regular run: every second) those and the
# ones the shapes below need: the same code paths in a fraction of the
# time.
NEEDED = {"lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-on",
          "lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-off",
          "lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-on",
          "lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-off",
          "lttng-kernel-6.1.192-patched-bgsnapshot-latprobe",
          "lttng-kernel-6.1.192-stock-nxrecovery-dirtylog",
          "lttng-kernel-6.1.192-stock-basic-thp-split",
          "lttng-kernel-6.1.192-stock-basic-debian-probes",
          "lttng-kernel-6.1.192-patched-multivm-bgsnapshot-nxrecovery-"
          "perm-upgrade-off",
          "lttng-kernel-6.1.192-patched-multivm-bgsnapshot-nxrecovery-"
          "perm-upgrade-on"}
sliced_run = sliced()
fixtures = trace_fixtures(data)
if sliced_run:
    extra = NEEDED - set(fixtures)
    print("and %d more that the shapes below need" % len(extra))
    fixtures = sorted(set(fixtures) | extra)
dbs = {}
for fx in fixtures:
    fdir = os.path.join(data, fx)
    cap = os.path.join(fresh_dir(os.path.join(work, fx)), "capture")
    os.makedirs(cap)
    inputs = {}
    with tarfile.open(os.path.join(fdir, "trace.tar.xz")) as tf:
        tf.extractall(cap)
    manifest = os.path.join(fdir, "manifest.json")
    if os.path.exists(manifest):
        shutil.copy(manifest, cap)
        with open(manifest) as f:
            errs = errors("manifest", json.load(f))
        check(not errs, "%s: manifest.json: %s" % (fx, errs[:5]))
    inputs["lttng"] = cap
    if os.path.exists(os.path.join(fdir, "perf-ctf.tar.xz")):
        with tarfile.open(os.path.join(fdir, "perf-ctf.tar.xz")) as tf:
            tf.extractall(cap)
        inputs = {"lttng": os.path.join(cap, "trace"),
                  "perf": os.path.join(cap, "perf-ctf")}
    for name in ("trace.dat", "ftrace-text.txt"):
        src = os.path.join(fdir, name + ".xz")
        if os.path.exists(src):
            with lzma.open(src) as s, \
                    open(os.path.join(cap, name), "wb") as d:
                shutil.copyfileobj(s, d)
            inputs[name] = os.path.join(cap, name)
    for kind, src in inputs.items():
        db = os.path.join(work, fx, kind + ".db")
        r = run([mmr, "ingest", src, "-o", db])
        check(r.returncode == 0, "%s %s: ingest: %s" % (fx, kind, r.stderr))
        if r.returncode == 0:
            dbs[(fx, kind)] = db
            all_outputs(db, "%s %s" % (fx, kind))
check(len({fx for fx, _ in dbs}) == len(fixtures) and
      len(dbs) >= len(fixtures) + (0 if sliced_run else 4),
      "every fixture and input ingested: %d DBs" % len(dbs))

# 2. The shapes no fixture gives as it is.
# A knob-on capture replayed as if recorded under baseline: the
# self-check of a real capture fails (zap counts differ).
db = dbs[("lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-on",
          "lttng")]
rc, doc = output(["fidelity", db, "--json", "--recorded-policy", "baseline"],
                 "perm-upgrade-on as baseline", (6,))
if doc:
    validate("fidelity", doc, "perm-upgrade-on as baseline")
    note_shapes("fidelity", doc)
# A model rule switched off (tests/test_rules_off.py): mismatches.
odb = dbs[("lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-off",
           "lttng")]
rc, doc = output(["fidelity", odb, "--json", "--rule-off", "double_start"],
                 "rule off", (6,))
if doc:
    validate("fidelity", doc, "rule off")
    check(doc["mismatches"], "rule off: mismatches listed")
# A sweep policy, named nx-ratio=N.
sdb = dbs[("lttng-kernel-6.1.192-stock-nxrecovery-dirtylog", "lttng")]
rc, doc = output(["replay", sdb, "--json", "--policy", "nx-ratio=120"],
                 "sweep policy")
if doc:
    validate("replay", doc, "sweep policy")
    note_shapes("replay", doc)
# A DB edited to lose 20 leaf zaps, as in a lost-event gap (synthetic
# damage of a real capture, mmrtest.damage_leaf_zaps()).
bad = damage_leaf_zaps(
    dbs[("lttng-kernel-6.1.192-stock-basic-thp-split", "lttng")],
    os.path.join(work, "damaged.db"))
for extra in ([], ["--force"]):
    what = "damaged replay " + " ".join(extra)
    rc, doc = output(["replay", bad, "--json"] + extra, what, (6,))
    if doc:
        validate("replay", doc, what)
        note_shapes("replay", doc)
rc, doc = output(["fidelity", bad, "--json"], "damaged fidelity", (6,))
if doc:
    validate("fidelity", doc, "damaged fidelity")
    note_shapes("fidelity", doc)

# compare on the A/B pairs: one run a side, and two (the same DB twice)
# with three thresholds, so ranges overlap or not.
for pair in ("bgsnapshot-perm-upgrade", "nxrecovery-skip-dirty"):
    a = dbs[("lttng-kernel-6.1.192-patched-%s-off" % pair, "lttng")]
    b = dbs[("lttng-kernel-6.1.192-patched-%s-on" % pair, "lttng")]
    for extra in ([], ["--a", a, "--b", b, "--threshold-ms", "0.5,1,3"]):
        what = "compare %s %s" % (pair, "two runs" if extra else "")
        rc, doc = output(["compare", "--a", a, "--b", b, "--json"] + extra,
                         what)
        if doc:
            validate("compare", doc, what)
            if extra and any(r["ranges_overlap"] is not None
                             for r in doc["rows"]):
                seen.add("compare overlap")
                docs.setdefault("compare", doc)
            wi = [r for r in doc["rows"] if "what_if" in r]
            if wi:
                seen.add("compare what_if")
                # The rows with a what-if first, so they are mutated.
                docs.setdefault("compare what_if", dict(doc, rows=wi))

# compare on the two-VM A/B pair: a block per VM (vms).
mv = "lttng-kernel-6.1.192-patched-multivm-bgsnapshot-nxrecovery-perm-upgrade-"
if (mv + "off", "lttng") in dbs and (mv + "on", "lttng") in dbs:
    rc, doc = output(["compare", "--a", dbs[(mv + "off", "lttng")], "--b",
                      dbs[(mv + "on", "lttng")], "--json"], "compare two VMs")
    if doc:
        validate("compare", doc, "compare two VMs")
        if doc.get("vms"):
            seen.add("compare vms")

# spikes --against: the latency-probe run against the other bgsnapshot
# run of its kernel.
lp = dbs[("lttng-kernel-6.1.192-patched-bgsnapshot-latprobe", "lttng")]
rc, doc = output(["spikes", lp, "--json", "--against", odb], "spikes against")
if doc:
    validate("spikes", doc, "spikes against")
    if doc.get("against", {}).get("phases"):
        seen.add("spikes against")
        docs.setdefault("spikes against", doc)

for shape in ("spikes against", "compare overlap", "compare what_if",
              "compare vms", "summary probes", "summary unknown", "upgrade inference",
              "fidelity mismatches", "replay withheld", "replay unverified",
              "not_modelled", "sweep policy", "spikes top",
              "spikes threshold"):
    check(shape in seen, "a run gave the shape: " + shape)

# 3. The schemas are not vacuous.  Paths: keys, "*" any key or index.
OPTIONAL = {
    "summary": [r"raw_event_counts/\*", r"raw_event_mapping/\*",
                r"latency/probes/\*", r"per_vcpu_faults/\*",
                r"vms/\*/per_vcpu_faults/\*",
                r"notifier_events/\w+"],
    "fidelity": [r"upgrade_inference", r"upgrade_inference/(precision|recall)",
                 r"vms", r"vm_attribution", r"verdict/vms_ok"],
    "replay": [r"self_check/upgrade_inference",
               r"self_check/upgrade_inference/(precision|recall)",
               r"policies/\*", r"policies/\*/not_modelled",
               r"vms", r"vm_attribution", r"self_check/verdict/vms_ok"],
    "spikes": [r"against"],
    "compare": [r"rows/\*/what_if", r"vms"],
}
OPEN_MAPS = {"summary": [r"raw_event_counts", r"raw_event_mapping"]}
# Keys of maps whose names are data (raw events, probes, vCPUs, policies).
MAPS = [r"^raw_event_counts$", r"^raw_event_mapping$", r"^latency/probes$",
        r"^per_vcpu_faults$", r"^vms/\*/per_vcpu_faults$", r"^policies$"]


def generic(path):
    """A path with the data-named map keys and array indices as "*"."""
    out = []
    for i, p in enumerate(path):
        parent = "/".join(out)
        if isinstance(p, int) or any(re.match(m, parent) for m in MAPS):
            out.append("*")
        else:
            out.append(p)
    return "/".join(out)


def nodes(doc, path=()):
    """Every (path, node): each key of objects, the first item of arrays."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from nodes(v, path + (k,))
    elif isinstance(doc, list) and doc:
        yield from nodes(doc[0], path + (0,))


def at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def other_type(v):
    if isinstance(v, bool):
        return "true"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return 0
    if v is None:
        return {}
    return None          # objects and arrays: their items are mutated


def matches(patterns, path):
    return any(re.fullmatch(p, path) for p in patterns)


mutations = 0
for shape, doc in sorted(docs.items()):
    name = shape.split()[0]
    check(not errors(name, doc), "%s: the unmutated document is valid" % shape)
    for path, node in list(nodes(doc)):
        g = generic(path)
        if path and not isinstance(path[-1], int):
            m = copy.deepcopy(doc)
            del at(m, path[:-1])[path[-1]]
            mutations += 1
            if not matches(OPTIONAL[name], g):
                check(errors(name, m), "%s: valid without %s" % (shape, g))
        t = other_type(node)
        if t is not None and path:
            m = copy.deepcopy(doc)
            at(m, path[:-1])[path[-1]] = t
            mutations += 1
            check(errors(name, m), "%s: valid with %s = %r"
                  % (shape, g, t))
        if isinstance(node, dict) and not matches(OPEN_MAPS.get(name, []), g):
            m = copy.deepcopy(doc)
            sibling = next(iter(node.values()), 0)
            at(m, path)["zz_unknown_key"] = copy.deepcopy(sibling)
            mutations += 1
            check(errors(name, m), "%s: valid with unknown key at /%s"
                  % (shape, g))
check(mutations > 1000, "%d mutations of %d documents" % (mutations, len(docs)))
check(len(docs) == 10, "documents mutated: %s" % sorted(docs))
print("%d DBs, %d mutations" % (len(dbs), mutations))
finish()
