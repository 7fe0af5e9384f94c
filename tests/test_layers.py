"""The layers of analyze/, checked on the source ("Lower layers never
include upper ones", analyze/CMakeLists.txt, whose arrows there are the
data flow: by includes, ingest sits on model and db).  Every #include
"..." of a .c or .h under analyze/ goes to its own directory or down

    util -> db -> model -> ingest | replay -> metrics -> report | export
    -> fleet -> cli

(ingest and replay are one rank and include neither the other), and no
command is built on another: a cli/cmd_X.c includes no cli/cmd_Y file
and uses no function or variable that a cli/cmd_Y.c defines (what
commands share lives in cli/ outside the cmd_*.c files).

Before the tree, the checker is run on copies of analyze/ in a temporary
directory with one edge planted in each: back-edges (model/tdp.c
including metrics/summary.h, util including cli), ingest including
replay and replay ingest, an include outside the layers, a command
including another command's header, calling a function another command
defines, reading a variable another defines.  Each must be reported,
naming its file and line; and planted allowed things (downward and
same-directory includes, a static function of the same name in two
commands, a command's function named in another's comment or string)
must not be.  So the checker cannot rot into passing everything.

What it cannot catch: a dependency made without #include "..." (a
declaration typed by hand, <...> includes of analyze headers), calls
through function pointers or through a shared header's macros, and a
command's helper that sits in a shared cli/ file but serves one command
only.

usage: test_layers.py ANALYZE_DIR
"""
import collections
import os
import re
import shutil
import sys
import tempfile

from mmrtest import check, finish

# Rank of each directory: an include may go to its own directory or to a
# lower rank.  Equal ranks in different directories may not include each
# other.
LAYERS = {"util": 0, "db": 1, "model": 2, "ingest": 3, "replay": 3,
          "metrics": 4, "report": 5, "export": 5, "fleet": 6, "cli": 7}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
CMD_FILE = re.compile(r"^cli/cmd_(\w+)\.[ch]$")
CMD_INCLUDE = re.compile(r"^(?:cli/)?cmd_(\w+)\.\w+$")
IDENT = re.compile(r"[A-Za-z_]\w*")


LEXEME = re.compile(r"""/\*.*?(?:\*/|\Z)|//[^\n]*|"(?:\\.|[^"\\\n])*"?"""
                    r"""|'(?:\\.|[^'\\\n])*'?""", re.S)


def blank(text, strings):
    """text with comments (and, if strings, what string and character
    literals hold) replaced by spaces, newlines kept: offsets and line
    numbers stay those of the file."""
    def sub(m):
        s = m.group()
        if s[0] in "\"'":
            if not strings:
                return s
            return s[0] + " " * (len(s) - 2) + s[-1] if len(s) > 1 else s
        return re.sub(r"[^\n]", " ", s)
    return LEXEME.sub(sub, text)


def blank_preprocessor(text):
    """text with preprocessor lines (and their continuations) blanked."""
    lines = text.split("\n")
    cont = False
    for i, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines[i] = " " * len(line)
    return "\n".join(lines)


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


ASSIGN = re.compile(r"(?<![=!<>])=(?!=)")


def definitions(text):
    """[(name, line)] of the functions and variables a .c file defines
    with external linkage (not static, not extern declarations, not
    prototypes), from its text with comments, strings and preprocessor
    lines blanked."""
    defs = []
    depth, start, body = 0, 0, False
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                head = text[start:i]
                body = (head.rstrip().endswith(")") and
                        not ASSIGN.search(head))
                if body:
                    defs.extend(definition(text, start, i, True))
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and body:         # a function's body ends it
                start, body = i + 1, False
        elif c == ";" and depth == 0:       # any other statement ends
            defs.extend(definition(text, start, i, False))
            start = i + 1
    return defs


def outer(head):
    """head with what is inside braces blanked (the braces kept)."""
    out, depth = [], 0
    for c in head:
        if c == "}":
            depth -= 1
        out.append(c if depth <= 0 or c == "\n" else " ")
        if c == "{":
            depth += 1
    return "".join(out)


def definition(text, start, end, function):
    """The definition text[start:end] makes: a function whose body
    follows (function), else the variable a top-level statement
    defines; [] for a static or extern one, a prototype, a type."""
    head = outer(text[start:end])
    words = IDENT.findall(head)
    if len(words) < 2 or {"static", "extern", "typedef"} & set(words):
        return []
    if function:
        m = re.search(r"([A-Za-z_]\w*)\s*\(", head)
    elif ASSIGN.search(head):               # initialised
        m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*"
                      r"(?<![=!<>])=(?!=)", head)
    elif "(" in head:                       # a prototype
        return []
    elif len(words) == 2 and words[0] in ("struct", "union", "enum"):
        return []                           # struct foo;
    else:                                   # int x; struct s {...} x;
        m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$", head)
    if not m:
        return []
    return [(m.group(1), line_of(text, start + m.start(1)))]


def check_tree(root):
    """The layering violations under root (an analyze/ directory), as
    sorted (path, line, message) with path relative to root's parent."""
    base = os.path.basename(os.path.normpath(root))
    files = {}
    for d, _, names in os.walk(root):
        for name in names:
            if name.endswith((".c", ".h")):
                p = os.path.join(d, name)
                rel = os.path.relpath(p, root).replace(os.sep, "/")
                with open(p, errors="replace") as f:
                    files[rel] = f.read()
    found = []

    def bad(rel, line, msg):
        found.append((base + "/" + rel, line, msg))

    for rel, text in sorted(files.items()):
        src = rel.split("/")[0] if "/" in rel else ""
        if src not in LAYERS:
            bad(rel, 1, "not in a layer directory (%s)" %
                ", ".join(LAYERS))
            continue
        cmd = CMD_FILE.match(rel)
        nocomment = blank(text, False)
        for m in INCLUDE.finditer(nocomment):
            inc, line = m.group(1), line_of(nocomment, m.start())
            dst = inc.split("/")[0] if "/" in inc else src
            if dst not in LAYERS:
                bad(rel, line, 'includes "%s", not in a layer directory'
                    % inc)
            elif dst != src and LAYERS[dst] > LAYERS[src]:
                bad(rel, line, 'back-edge: %s includes "%s" (%s is above '
                    '%s)' % (src, inc, dst, src))
            elif dst != src and LAYERS[dst] == LAYERS[src]:
                bad(rel, line, 'sideways: %s includes "%s" (%s and %s are '
                    'one rank: neither includes the other)' %
                    (src, inc, src, dst))
            if cmd and dst == "cli":
                other = CMD_INCLUDE.match(inc)
                if other and other.group(1) != cmd.group(1):
                    bad(rel, line, 'sideways between commands: cmd_%s '
                        'includes "%s"' % (cmd.group(1), inc))

    # Commands: what one cmd_*.c defines, another must not use.
    cmds = sorted(r for r in files if CMD_FILE.match(r) and r.endswith(".c"))
    code = {r: blank(files[r], True) for r in cmds}
    for owner in cmds:
        for name, dline in definitions(blank_preprocessor(code[owner])):
            use = re.compile(r"\b%s\b" % re.escape(name))
            for user in cmds:
                if user == owner:
                    continue
                for m in use.finditer(code[user]):
                    bad(user, line_of(code[user], m.start()),
                        "sideways between commands: uses %s, defined in "
                        "%s/%s:%d (move what commands share out of "
                        "cmd_*.c)" % (name, base, owner, dline))
    if not files:
        bad("", 0, "no .c or .h files")
    return sorted(set(found)), len(files)


def show(found):
    return "\n".join("%s:%d: %s" % v for v in found)


def key(v):
    """A violation without line numbers: (file, message)."""
    return v[0], re.sub(r":\d+", "", v[2])


def first_file(root, d, prefer, pattern=r".*\.c$"):
    """root/d/prefer if it exists, else the first matching file in d."""
    if os.path.exists(os.path.join(root, d, prefer)):
        return d + "/" + prefer
    names = sorted(n for n in os.listdir(os.path.join(root, d))
                   if re.match(pattern, n))
    return d + "/" + names[0] if names else None


def plant_include(root, rel, inc):
    """Add #include "inc" after rel's first #include (or on line 1);
    return the line it is on."""
    p = os.path.join(root, rel)
    with open(p) as f:
        lines = f.read().split("\n")
    at = next((i + 1 for i, l in enumerate(lines)
               if l.startswith("#include")), 0)
    lines.insert(at, '#include "%s"' % inc)
    with open(p, "w") as f:
        f.write("\n".join(lines))
    return at + 1


def append(root, rel, text):
    """Append text to rel; return the line its first line is on."""
    p = os.path.join(root, rel)
    with open(p) as f:
        old = f.read()
    if not old.endswith("\n"):
        old += "\n"
    with open(p, "w") as f:
        f.write(old + text)
    return old.count("\n") + 1


def self_test(analyze):
    """Plant edges in copies of analyze/; each must be reported (or, for
    the allowed ones, not)."""
    tmp = tempfile.mkdtemp(prefix="test_layers.")
    try:
        pristine = os.path.join(tmp, "pristine", "analyze")
        shutil.copytree(analyze, pristine)
        before, _ = check_tree(pristine)

        def planted(what, plant, expect):
            """Copy, plant (returns (file, line) or None), compare."""
            work = os.path.join(tmp, "work", "analyze")
            shutil.rmtree(os.path.dirname(work), ignore_errors=True)
            shutil.copytree(pristine, work)
            where = plant(work)
            after, _ = check_tree(work)
            # New: by file and message, line numbers aside (a plant
            # moves the lines below it).
            extra = collections.Counter(map(key, after))
            extra.subtract(collections.Counter(map(key, before)))
            new = [v for v in after if extra[key(v)] > 0]
            nnew = sum(n for n in extra.values() if n > 0)
            if expect is None:
                check(nnew == 0, "planted %s: reported, though allowed:\n%s"
                      % (what, show(new)))
                return
            path, line = where
            hit = [v for v in new if v[0] == "analyze/" + path and
                   v[1] == line and expect in v[2]]
            check(len(hit) == 1 and nnew == 1,
                  "planted %s at analyze/%s:%d: expected one new violation "
                  "there naming %r, got:\n%s" %
                  (what, path, line, expect, show(new) or "(none)"))
            print("planted %s: reported: %s" % (what, show(hit)))

        def include_plant(d, prefer, inc):
            def plant(work):
                rel = first_file(work, d, prefer)
                return rel, plant_include(work, rel, inc)
            return plant

        planted("back-edge model -> metrics",
                include_plant("model", "tdp.c", "metrics/summary.h"),
                "back-edge")
        planted("back-edge util -> cli",
                include_plant("util", "log.c", "cli/cli.h"), "back-edge")
        planted("ingest -> replay",
                include_plant("ingest", "ingest.c", "replay/engine.h"),
                "sideways")
        planted("replay -> ingest",
                include_plant("replay", "engine.c", "ingest/ingest.h"),
                "sideways")
        planted("an include out of the layers",
                include_plant("db", "db.c", "../tests/check.h"),
                "not in a layer directory")

        def cmd_pair(work):
            cmds = sorted(n for n in os.listdir(os.path.join(work, "cli"))
                          if re.match(r"cmd_\w+\.c$", n))
            return "cli/" + cmds[0], "cli/" + cmds[1]

        def cmd_include(work):
            a, b = cmd_pair(work)
            other = os.path.basename(b)[:-2] + ".h"
            return a, plant_include(work, a, "cli/" + other)
        planted("a command including another's header", cmd_include,
                "sideways between commands")

        def cmd_call(work):
            a, b = cmd_pair(work)
            append(work, b, "int layers_planted_helper(int x)\n"
                   "{\n\treturn x;\n}\n")
            line = append(work, a, "int layers_planted_user(void);\n"
                          "int layers_planted_user(void)\n{\n"
                          "\treturn layers_planted_helper(1);\n}\n")
            return a, line + 3
        planted("a command calling another's function", cmd_call,
                "uses layers_planted_helper")

        def cmd_variable(work):
            a, b = cmd_pair(work)
            append(work, b, "const int layers_planted_table[2] = "
                   "{ 1, 2 };\n")
            line = append(work, a, "int layers_planted_read(void);\n"
                          "int layers_planted_read(void)\n{\n"
                          "\treturn layers_planted_table[0];\n}\n")
            return a, line + 3
        planted("a command reading another's variable", cmd_variable,
                "uses layers_planted_table")

        def allowed(work):
            a, b = cmd_pair(work)
            plant_include(work, first_file(work, "metrics", "summary.c"),
                          "replay/engine.h")
            plant_include(work, first_file(work, "cli", "cmd_summary.c",
                                           r"cmd_\w+\.c$"), "util/log.h")
            plant_include(work, first_file(work, "replay", "engine.c"),
                          "engine_planted.h")
            for f in (a, b):
                append(work, f, "static int layers_planted_local(void)\n"
                       "{\n\treturn 0;\n}\n"
                       "int layers_planted_alias(void);\n")
            append(work, b, "int layers_planted_own(void)\n"
                   "{\n\treturn layers_planted_local();\n}\n")
            append(work, a, "/* not a call: layers_planted_own() */\n"
                   'static const char *layers_planted_s = '
                   '"layers_planted_own";\n')
            return None
        planted("allowed edges (down, same directory, static, comment, "
                "string)", allowed, None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


analyze = sys.argv[1]
self_test(analyze)
found, nfiles = check_tree(analyze)
check(nfiles > 50 and all(os.path.isdir(os.path.join(analyze, d))
                          for d in LAYERS),
      "%s: %d .c/.h files, every layer directory present" %
      (analyze, nfiles))
for v in found:
    check(False, "%s:%d: %s" % v)
print("%d files checked, %d violation(s)" % (nfiles, len(found)))
finish()
