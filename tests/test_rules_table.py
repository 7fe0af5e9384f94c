"""docs/design.md's tables of the model's rules against engine.h.

usage: test_rules_table.py SOURCE_DIR

engine.h's `REPLAY_RULE_LIST` is made of one list per layer
(REPLAY_RULES_KERNEL, _TIMING, _IDENTITY, _FACTS); each entry names the
rule's switch, its layer, its situations, the kernel function it mirrors
and the engine function that takes it.  Checks:
  - each entry's layer is the layer of the list it is in, and no switch
    is named twice;
  - the engine function is defined in analyze/ (a line that begins a
    definition of it in a .c file);
  - docs/design.md has one table per layer whose rows are that list's
    entries, in its order: switch, situations, kernel function and engine
    function as engine.h gives them, and a sentence of what the rule
    cannot catch (at most 40 words).
The check bites: a copy of engine.h with a planted rule, and one with a
rule moved to another layer, are reported.
What this cannot catch: whether the kernel function named is the right
one, or the sentence true (a reader's work: the scenarios and
tests/test_rules_off.py test the rules themselves).
"""
import os
import re
import sys

from mmrtest import check, finish

src = sys.argv[1]
LAYERS = ("kernel", "timing", "identity", "facts")
SIT = {"SIT_EVERY": "every", "SIT_STOCK": "stock", "SIT_PATCHED": "patched",
       "SIT_MIDRUN": "mid-run", "SIT_MULTIVM": "several VMs"}
ENTRY = re.compile(r'X\((RULE_\w+), "(\w+)",\s*(?:\\\s*)?(RULE_LAYER_\w+), '
                   r'([A-Z_ |]+?),\s*(?:\\\s*)?"(\w+)",\s*(?:\\\s*)?'
                   r'"(\w+)"\)')
LIST = re.compile(r'^#define REPLAY_RULES_(\w+)\(X\) \\$', re.M)


def header_rules(text):
    """{layer: [(switch, layer named, situations, kernel fn, engine fn)]}
    of engine.h's text, by the list each entry is in."""
    out = {}
    marks = [(m.start(), m.group(1).lower()) for m in LIST.finditer(text)]
    for at, layer in marks:
        end = text.find("\n\n", at)
        body = text[at:end if end >= 0 else len(text)]
        out[layer] = [(n, lay[len("RULE_LAYER_"):].lower(),
                       ", ".join(SIT[s.strip()] for s in sits.split("|")),
                       k, f)
                      for _, n, lay, sits, k, f in ENTRY.findall(body)]
    return out


def doc_rules(text):
    """{layer: [(switch, situations, kernel fn, engine fn, cannot)]} of
    design.md's tables under "Layer LAYER: ...:"."""
    out = {}
    for layer in LAYERS:
        m = re.search(r'^Layer %s: [^\n]*:\n\n((?:\|[^\n]*\n)+)' % layer,
                      text, re.M)
        if not m:
            continue
        rows = []
        for line in m.group(1).splitlines()[2:]:
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if len(cells) != 5:
                rows.append(("(a row of %d cells)" % len(cells),) * 5)
                continue
            rows.append((cells[0].strip("`"), cells[1],
                         cells[2].strip("`").rstrip("()"),
                         cells[3].strip("`").rstrip("()"), cells[4]))
        out[layer] = rows
    return out


def defined(name, analyze):
    pat = re.compile(r'^(?:static )?(?:inline )?[\w ]+[ *]%s\(' % name, re.M)
    for d, _, files in os.walk(analyze):
        for f in files:
            if f.endswith(".c") and pat.search(
                    open(os.path.join(d, f)).read()):
                return True
    return False


def compare(hdr, doc, analyze):
    """What is wrong, as a list of sentences."""
    bad = []
    seen = set()
    for layer in LAYERS:
        if layer not in hdr:
            bad.append("engine.h has no list REPLAY_RULES_%s"
                       % layer.upper())
            continue
        for n, lay, _, _, f in hdr[layer]:
            if lay != layer:
                bad.append("%s: layer %s in the list of layer %s"
                           % (n, lay, layer))
            if n in seen:
                bad.append("%s: named twice" % n)
            seen.add(n)
            if analyze and not defined(f, analyze):
                bad.append("%s: engine function %s() is not defined in "
                           "analyze/" % (n, f))
        want = [(n, s, k, f) for n, _, s, k, f in hdr[layer]]
        got = [r[:4] for r in doc.get(layer, [])]
        if want != got:
            missing = [w[0] for w in want if w not in got]
            extra = [g[0] for g in got if g not in want]
            bad.append("layer %s: design.md's table differs from engine.h "
                       "(not in the table as engine.h has it: %s; in the "
                       "table only: %s%s)" % (
                           layer, missing, extra,
                           "; order" if not missing and not extra else ""))
        for r in doc.get(layer, []):
            words = len(r[4].split())
            if not 0 < words <= 40:
                bad.append("%s: what it cannot catch in %d words" % (r[0],
                                                                   words))
    return bad


header = open(os.path.join(src, "analyze/replay/engine.h")).read()
design = open(os.path.join(src, "docs/design.md")).read()
hdr, doc = header_rules(header), doc_rules(design)
n = sum(len(v) for v in hdr.values())
# Every entry of REPLAY_RULE_LIST is read: as many as the X( of its lists.
listed = len(re.findall(r'\bX\(RULE_\w+,', header))
check(n == listed and n > 0, "engine.h: %d rules read of %d listed"
      % (n, listed))
bad = compare(hdr, doc, os.path.join(src, "analyze"))
check(not bad, "design.md against engine.h:\n  " + "\n  ".join(bad))
print("%d rules: %s" % (n, ", ".join("%s %d" % (layer, len(hdr.get(layer, [])))
                                     for layer in LAYERS)))

# The check bites: a rule planted in engine.h's timing list, and the
# first kernel rule moved to the facts list, are reported.
planted = header.replace(
    "#define REPLAY_RULES_TIMING(X) \\\n",
    "#define REPLAY_RULES_TIMING(X) \\\n"
    "\tX(RULE_PLANTED, \"planted\", RULE_LAYER_TIMING, SIT_EVERY, \\\n"
    "\t  \"handle_changed_spte\", \"engine_on_spte\") \\\n", 1)
bad = compare(header_rules(planted), doc, None)
check(any("planted" in b for b in bad),
      "a planted rule is not reported: %s" % bad)
first = hdr["kernel"][0][0]
m = re.search(r'\tX\(RULE_\w+, "%s",.*?\)( \\)?\n' % first, header, re.S)
moved = header.replace(m.group(0), "", 1).replace(
    "#define REPLAY_RULES_FACTS(X) \\\n",
    "#define REPLAY_RULES_FACTS(X) \\\n" + m.group(0).rstrip("\n").rstrip(
        " \\") + " \\\n", 1)
bad = compare(header_rules(moved), doc, None)
check(any(first in b and "layer kernel in the list of layer facts" in b
          for b in bad), "a rule moved to another layer is not reported: "
      "%s" % bad)
finish()
