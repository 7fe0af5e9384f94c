"""Every kernel's LTTng event layouts against the event catalogue.

usage: test_kernel_series_events.py KERNEL_SERIES_DIR EVENTS_JSON

The analyzer reads a kernel's events only through schemas/events.json,
never by kernel version.  For each kernel-series/linux-VER/, the event
definitions its lttng-modules patches add (LTTNG_TRACEPOINT_EVENT*,
with the ctf_* field names of each definition, one per #if branch) are
read from the '+' lines of the patches, and:

1. every catalogue entry for an event a kernel's probes define has, in
   every definition of that event, a field for each of its required
   columns (one of the listed alternatives);
2. an event defined for several kernels has the same field names on all
   of them, unless the catalogue lists an alternative for each field that
   differs (the way a changed field is versioned);
3. the new tracepoints of the Linux series (TRACE_EVENT and
   DECLARE_EVENT_CLASS instances added by linux/ patches) all have an
   LTTng probe and a catalogue entry, on every kernel.

What it cannot catch: a probe whose field reads the wrong kernel value
under the right name, or a kernel tracepoint whose prototype changed
without its probe (the probe Kbuild and the build in check.sh --full
catch those); events defined in lttng-modules itself, outside the
patches, are not read.
"""
import glob
import json
import os
import re
import sys

from mmrtest import check, finish

series_dir, events_json = sys.argv[1:3]

EVENT = re.compile(
    r'LTTNG_TRACEPOINT_EVENT(_MAP|_CLASS|_INSTANCE|_INSTANCE_MAP)?\s*\(\s*'
    r'(\w+)\s*,(?:\s*(\w+)\s*,(?:\s*(\w+)\s*,)?)?')
FIELD = re.compile(r'ctf_\w+\(\s*[^,()]+(?:\([^)]*\))?\s*,\s*(\w+)\s*,')
LINUX_EVENT = re.compile(r'^(?:TRACE_EVENT|DEFINE_EVENT)\(\s*(\w+)\s*,'
                         r'(?:\s*(\w+)\s*,)?', re.M)


def added_text(patches):
    """The '+' lines of the patches, without the diff markers."""
    out = []
    for p in patches:
        with open(p) as f:
            for line in f:
                if line.startswith('+') and not line.startswith('+++'):
                    out.append(line[1:])
    return ''.join(out)


def split_definitions(text):
    """(macro kind, args, body) of each LTTNG_TRACEPOINT_EVENT* macro."""
    starts = [m for m in EVENT.finditer(text)]
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        yield m.group(1) or '', [g for g in m.groups()[1:] if g], \
            text[m.start():end]


def probe_events(patches):
    """Event name -> list of field-name sets, one per definition."""
    classes, events = {}, {}
    for kind, args, body in split_definitions(added_text(patches)):
        fields = FIELD.findall(body)
        if kind == '_CLASS':
            classes[args[0]] = fields
        elif kind == '_INSTANCE':
            # (class, name, ...)
            events.setdefault(args[1], []).append(classes.get(args[0], []))
        elif kind == '_INSTANCE_MAP':
            # (class, kernel name, event name, ...)
            events.setdefault(args[2], []).append(classes.get(args[0], []))
        elif kind == '_MAP':
            events.setdefault(args[1], []).append(fields)
        else:
            events.setdefault(args[0], []).append(fields)
    return {k: [set(f) for f in v] for k, v in events.items()}


def linux_events(patches):
    """Tracepoints the Linux series adds (classes excluded)."""
    text = added_text(patches)
    names = set()
    for m in LINUX_EVENT.finditer(text):
        names.add(m.group(2) if text[m.start():].startswith('DEFINE_EVENT')
                  else m.group(1))
    names.update(re.findall(r'^TRACE_EVENT\(\s*\n\s*(\w+),', text, re.M))
    return names


# 'raw' is an event's name or its names (LTTng's first, then ftrace's).
catalogue = {}
with open(events_json) as f:
    for e in json.load(f)['events']:
        for raw in [e['raw']] if isinstance(e['raw'], str) else e['raw']:
            catalogue[raw] = e

kernels = {}
for d in sorted(glob.glob(os.path.join(series_dir, 'linux-*'))):
    ver = os.path.basename(d)[len('linux-'):]
    lt, lx = [sorted(p for p in glob.glob(os.path.join(d, sub, '[0-9]*.patch'))
                     if not p.endswith('-cover-letter.patch'))
              for sub in ('lttng-modules', 'linux')]
    kernels[ver] = (probe_events(lt), linux_events(lx))
    check(lx, '%s: no linux patches' % ver)
    check(lt, '%s: no lttng-modules patches' % ver)

check(len(kernels) >= 2, 'fewer than two kernels in %s' % series_dir)

n_events = 0
for ver, (events, new_tps) in sorted(kernels.items()):
    # 1. required columns resolve in every definition
    for name, defs in sorted(events.items()):
        entry = catalogue.get(name)
        if entry is None:
            continue
        n_events += 1
        for col in entry.get('required', []):
            alts = entry['columns'][col]
            alts = [alts] if isinstance(alts, str) else alts
            for i, fields in enumerate(defs):
                check(any(a in fields for a in alts),
                      '%s: %s (definition %d) has no field for required '
                      'column %s (%s)' % (ver, name, i + 1, col, alts))
    # 3. every new kernel tracepoint has a probe and a catalogue entry
    for tp in sorted(new_tps):
        check(tp in events, '%s: tracepoint %s has no LTTng probe' % (ver, tp))
        check(tp in catalogue, '%s: tracepoint %s is not in the catalogue' % (ver, tp))
    # 9 from patches 3-11, kvm_vm_create and kvm_vm_destroy from patch 13.
    check(len(new_tps) == 11, '%s: %d new tracepoints found, the series adds 11' % (ver, len(new_tps)))


def alternatives(entry, field):
    """The fields the catalogue accepts in place of field (itself included)."""
    for alts in entry['columns'].values():
        alts = [alts] if isinstance(alts, str) else alts
        if field in alts:
            return set(alts)
    return {field}


# 2. the same fields on every kernel, or versioned in the catalogue
vers = sorted(kernels)
for a_i, a in enumerate(vers):
    for b in vers[a_i + 1:]:
        ea, eb = kernels[a][0], kernels[b][0]
        for name in sorted(set(ea) & set(eb)):
            fa = set().union(*ea[name])
            fb = set().union(*eb[name])
            entry = catalogue.get(name, {'columns': {}})
            for field in sorted(fa ^ fb):
                other = fb if field in fa else fa
                check(alternatives(entry, field) & other,
                      '%s: field %s on %s only, not versioned in the '
                      'catalogue' % (name, field, a if field in fa else b))

print('%d kernels, %d (kernel, event) pairs checked' % (len(kernels), n_events))
finish()
