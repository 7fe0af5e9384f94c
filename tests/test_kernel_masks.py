"""The model's SPTE formats and EPT-violation decoding against the kernels.

usage: test_kernel_masks.py MODEL_DUMP [VER...]   (default VER: 6.1 6.12)

MODEL_DUMP is the model_dump program (tests/model_dump.c): the model's
tables as JSON.  For each kernel VER, the pristine Linux tree that
kernel-series/check.sh --quick unpacks into the cache
($MMUREPLAY_CACHE, default $HOME/.cache/mmureplay, ks/VER/linux: a git
repository whose tag mmureplay-base is Debian's linux-source-VER as
shipped; its work tree carries the series, so files are read from the
tag) gives the kernel's values:

  - the #defines of arch/x86/kvm/mmu/spte.h, arch/x86/kvm/mmu.h (the
    PT_*_MASK bits), arch/x86/include/asm/vmx.h,
    arch/x86/include/asm/kvm_host.h (PFERR_*) and
    arch/x86/include/asm/page_types.h (PAGE_SIZE), evaluated by the small
    evaluator below;
  - the shadow_*_mask assignments of kvm_mmu_reset_all_pte_masks() (NPT,
    and the start of EPT) and kvm_mmu_set_ept_masks() (EPT, over it) in
    arch/x86/kvm/mmu/spte.c, with has_ad_bits = true and has_exec_only =
    false;
  - the error_code statements of handle_ept_violation() in
    arch/x86/kvm/vmx/vmx.c (6.12: of __vmx_handle_ept_violation() in
    arch/x86/kvm/vmx/common.h, which it calls): which qualification mask
    sets which PFERR mask, run on each qualification bit 0..11 and on the
    qualifications real EPT hosts give (model_dump's samples).

Every field of both formats and every bit's PFERR value must equal the
model's.  Two fields differ between kernels by design, and are checked
against each kernel accordingly: nonpresent (SHADOW_NONPRESENT_VALUE,
which 6.1 does not have: it writes 0) and removed (6.1 REMOVED_SPTE is
the model's removed; 6.12 FROZEN_SPTE is nonpresent | removed).

Configuration the evaluator assumes: CONFIG_X86_64 set, CONFIG_PAGE_SHIFT
12, and CONFIG_DYNAMIC_PHYSICAL_MASK off, i.e. SPTE_BASE_ADDR_MASK is
the 52-bit mask (with it on, as X86_MEM_ENCRYPT selects it, the mask is
physical_mask at run time: that mask less any memory-encryption bit).  A #define under any other #if is used only when all its branches
agree.

Where the kernels differ, the model holds both and the test checks each
kernel against its part: besides nonpresent and removed above, 6.12's
kvm_mmu_set_ept_masks() adds VMX_EPT_SUPPRESS_VE_BIT (bit 63) to the
EPT shadow_present_mask (the model's hw_present | ve_suppress), and
6.12's __vmx_handle_ept_violation() (vmx/common.h) sets
PFERR_GUEST_FINAL/PAGE only when the qualification's bit 7 is set where
6.1 always sets one: the model decodes the access bits alone
(MEV_PFERR_ACCESS_MASK: PRESENT, WRITE, USER, FETCH), which both
kernels build alike, and each bit's value is compared under that mask.

Prints a table (field, kernel value, model value, ok or DIFF, and
where the kernel value comes from) per kernel; fails with one line per
difference naming the kernel file and the field.  A missing tree fails
with a message to run kernel-series/check.sh --quick.
"""
import json
import os
import re
import subprocess
import sys

M64 = (1 << 64) - 1
CONFIG = {'CONFIG_X86_64': 1, 'CONFIG_PAGE_SHIFT': 12,
          'CONFIG_DYNAMIC_PHYSICAL_MASK': None}   # None: not set
TAG = 'mmureplay-base'

F_SPTE_H = 'arch/x86/kvm/mmu/spte.h'
F_MMU_H = 'arch/x86/kvm/mmu.h'
F_VMX_H = 'arch/x86/include/asm/vmx.h'
F_HOST_H = 'arch/x86/include/asm/kvm_host.h'
F_PAGE_H = 'arch/x86/include/asm/page_types.h'
F_SPTE_C = 'arch/x86/kvm/mmu/spte.c'
F_VMX_C = 'arch/x86/kvm/vmx/vmx.c'
F_VMX_COMMON_H = 'arch/x86/kvm/vmx/common.h'   # 6.12: the decoding's home


class Unreadable(Exception):
    """The kernel source is not in a shape this test can read."""


# ------------------------------------------------------------- source text

def strip_comments(text):
    text = re.sub(r'/\*.*?\*/',
                  lambda m: '\n' * m.group(0).count('\n') or ' ', text,
                  flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def logical_lines(text):
    return strip_comments(text).replace('\\\n', ' ').split('\n')


# ---------------------------------------------------------------- tokens

TOKEN = re.compile(r'\s*(?:(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)|([A-Za-z_]\w*)|'
                   r'(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!()?:,<>]))')
TYPES = {'u8': 8, 'u16': 16, 'u32': 32, 'u64': 64, 's8': 8, 's16': 16,
         's32': 32, 's64': 64, 'int': 32, 'long': 64, 'unsigned': None,
         'signed': None, 'char': 8, 'short': 16}


def tokenize(s):
    out, pos = [], 0
    s = s.rstrip()
    while pos < len(s):
        m = TOKEN.match(s, pos)
        if not m:
            raise Unreadable('cannot read %r' % s[pos:])
        if m.group(1):
            out.append(('num', int(m.group(1), 0) if not
                        re.fullmatch(r'0\d+', m.group(1)) else
                        int(m.group(1), 8)))
        elif m.group(3):
            out.append(('id', m.group(3)))
        else:
            out.append(('op', m.group(4)))
        pos = m.end()
        while pos < len(s) and s[pos].isspace():
            pos += 1
    return out


# ------------------------------------------------------------- evaluator

class Defines:
    """#define NAME VALUE and #define NAME(ARGS) VALUE of a set of files,
    with the #if branch each came from."""

    def __init__(self):
        self.obj = {}      # name -> set of bodies
        self.fn = {}       # name -> set of (params, body)

    def add_file(self, path, text):
        # stack of (active, taken): active True/False/None (not known)
        stack = []

        def active():
            a = True
            for s, _ in stack:
                if s is False:
                    return False
                if s is None:
                    a = None
            return a

        for line in logical_lines(text):
            m = re.match(r'\s*#\s*(\w+)\s*(.*)$', line)
            if not m:
                continue
            d, rest = m.group(1), m.group(2).strip()
            if d in ('ifdef', 'ifndef'):
                v = self.is_defined(rest.split()[0])
                if v is not None and d == 'ifndef':
                    v = not v
                stack.append([v, v])
            elif d == 'if':
                v = self.cond(rest)
                stack.append([v, v])
            elif d == 'elif':
                if not stack:
                    raise Unreadable('%s: #elif without #if' % path)
                taken = stack[-1][1]
                if taken is True:
                    stack[-1][0] = False
                else:
                    v = self.cond(rest)
                    if taken is None and v is not False:
                        v = None
                    stack[-1] = [v, True if v else
                                 None if v is None else taken]
            elif d == 'else':
                if not stack:
                    raise Unreadable('%s: #else without #if' % path)
                taken = stack[-1][1]
                stack[-1][0] = None if taken is None else not taken
                stack[-1][1] = True
            elif d == 'endif':
                if stack:
                    stack.pop()
            elif d == 'define' and active() is not False:
                m = re.match(r'(\w+)(\(([^)]*)\))?\s*(.*)$', rest)
                if not m:
                    continue
                name, body = m.group(1), m.group(4).strip()
                if m.group(2) is not None:
                    params = tuple(p.strip() for p in m.group(3).split(',')
                                   if p.strip())
                    self.fn.setdefault(name, set()).add((params, body))
                else:
                    self.obj.setdefault(name, set()).add(body)

    def is_defined(self, name):
        if name in CONFIG:
            return CONFIG[name] is not None
        if name.startswith('CONFIG_'):
            return None
        return name in self.obj or name in self.fn

    def cond(self, expr):
        """An #if condition: True, False or None (not known)."""
        def cfg(m):
            v = self.is_defined(m.group(1))
            return {True: '1', False: '0', None: '__UNKNOWN__'}[v]
        expr = re.sub(r'(?:defined|IS_ENABLED|IS_BUILTIN)\s*\(\s*(\w+)\s*\)',
                      cfg, expr)
        expr = re.sub(r'defined\s+(\w+)', cfg, expr)
        if '__UNKNOWN__' in expr:
            return None
        try:
            return bool(Evaluator(self, cpp=True).eval(expr))
        except Unreadable:
            return None

    def body(self, name):
        bodies = self.obj.get(name)
        if not bodies:
            return None
        if len(bodies) > 1:
            raise Unreadable('%s is defined %d ways under #if (%s)' %
                             (name, len(bodies), ' | '.join(sorted(bodies))))
        return next(iter(bodies))

    def function(self, name):
        defs = self.fn.get(name)
        if not defs:
            return None
        if len(defs) > 1:
            raise Unreadable('%s() is defined %d ways under #if' %
                             (name, len(defs)))
        return next(iter(defs))


BUILTIN = {
    'BIT': lambda n: 1 << n,
    'BIT_ULL': lambda n: 1 << n,
    '_BITUL': lambda n: 1 << n,
    '_BITULL': lambda n: 1 << n,
    'GENMASK': lambda h, l: ((1 << (h + 1)) - 1) & ~((1 << l) - 1),
    'GENMASK_ULL': lambda h, l: ((1 << (h + 1)) - 1) & ~((1 << l) - 1),
    '_AC': lambda x, y: x,
    '_UL': lambda x: x,
    '_ULL': lambda x: x,
    'UL': lambda x: x,
    'ULL': lambda x: x,
}
# Suffix-only arguments of _AC(X, UL): names that are not values.
SUFFIXES = {'U', 'L', 'UL', 'ULL', 'LL'}


class Evaluator:
    """C constant expressions on 64-bit unsigned values: numbers with any
    suffix, names (#defines and given variables), casts to integer types,
    BIT/BIT_ULL/GENMASK/GENMASK_ULL/_AC, function-like #defines, unary
    ~ ! - +, * / %, + -, << >>, comparisons, & ^ |, && ||, ?:."""

    def __init__(self, defs, variables=None, cpp=False):
        self.defs = defs
        self.vars = variables or {}
        self.cpp = cpp
        self.expanding = []

    def eval(self, expr):
        toks = tokenize(expr) if isinstance(expr, str) else expr
        self.toks, self.i = toks, 0
        v = self.ternary()
        if self.i != len(self.toks):
            raise Unreadable('trailing %r in %r' % (self.toks[self.i:], expr))
        return v

    def peek(self, *ops):
        if self.i < len(self.toks) and self.toks[self.i][0] == 'op' and \
           self.toks[self.i][1] in ops:
            return self.toks[self.i][1]
        return None

    def take(self, op):
        if not self.peek(op):
            raise Unreadable('expected %r at %r' % (op, self.toks[self.i:]))
        self.i += 1

    def ternary(self):
        c = self.binary(0)
        if self.peek('?'):
            self.i += 1
            a = self.ternary()
            self.take(':')
            b = self.ternary()
            return a if c else b
        return c

    LEVELS = [('||',), ('&&',), ('|',), ('^',), ('&',), ('==', '!='),
              ('<', '>', '<=', '>='), ('<<', '>>'), ('+', '-'),
              ('*', '/', '%')]

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        v = self.binary(level + 1)
        while True:
            op = self.peek(*self.LEVELS[level])
            if not op:
                return v
            self.i += 1
            w = self.binary(level + 1)
            v = {
                '||': lambda: int(bool(v) or bool(w)),
                '&&': lambda: int(bool(v) and bool(w)),
                '|': lambda: v | w, '^': lambda: v ^ w, '&': lambda: v & w,
                '==': lambda: int(v == w), '!=': lambda: int(v != w),
                '<': lambda: int(v < w), '>': lambda: int(v > w),
                '<=': lambda: int(v <= w), '>=': lambda: int(v >= w),
                '<<': lambda: v << w, '>>': lambda: v >> w,
                '+': lambda: v + w, '-': lambda: v - w,
                '*': lambda: v * w, '/': lambda: v // w,
                '%': lambda: v % w,
            }[op]() & M64

    def unary(self):
        op = self.peek('~', '!', '-', '+')
        if op:
            self.i += 1
            v = self.unary()
            return {'~': ~v & M64, '!': int(not v), '-': -v & M64,
                    '+': v}[op]
        if self.peek('('):
            # A cast: ( type-names ).
            j = self.i + 1
            width = 0
            while j < len(self.toks) and self.toks[j][0] == 'id' and \
                    self.toks[j][1] in TYPES:
                width = TYPES[self.toks[j][1]] or width
                j += 1
            if j > self.i + 1 and j < len(self.toks) and \
                    self.toks[j] == ('op', ')'):
                self.i = j + 1
                v = self.unary()
                return v & ((1 << (width or 32)) - 1)
        return self.primary()

    def args(self):
        self.take('(')
        out, depth, cur = [], 0, []
        while True:
            if self.i >= len(self.toks):
                raise Unreadable('unclosed call')
            t = self.toks[self.i]
            self.i += 1
            if t == ('op', '(') :
                depth += 1
            elif t == ('op', ')'):
                if depth == 0:
                    out.append(cur)
                    return [a for a in out if a]
                depth -= 1
            elif t == ('op', ',') and depth == 0:
                out.append(cur)
                cur = []
                continue
            cur.append(t)

    def sub(self, toks):
        e = Evaluator(self.defs, self.vars, self.cpp)
        e.expanding = self.expanding
        return e.eval(toks)

    def primary(self):
        if self.i >= len(self.toks):
            raise Unreadable('expression ends early')
        kind, v = self.toks[self.i]
        if kind == 'num':
            self.i += 1
            return v
        if kind == 'op' and v == '(':
            self.i += 1
            r = self.ternary()
            self.take(')')
            return r
        if kind != 'id':
            raise Unreadable('unexpected %r' % v)
        self.i += 1
        name = v
        if name in self.vars:
            return self.vars[name]
        if self.peek('('):
            if name in BUILTIN:
                args = self.args()
                vals = [self.sub(a) if not (len(a) == 1 and a[0][0] == 'id'
                                            and a[0][1] in SUFFIXES) else 0
                        for a in args]
                return BUILTIN[name](*vals) & M64
            fn = self.defs.function(name)
            if fn is None:
                raise Unreadable('no definition of %s()' % name)
            params, body = fn
            args = self.args()
            if len(args) != len(params):
                raise Unreadable('%s() takes %d arguments' %
                                 (name, len(params)))
            toks = []
            for t in tokenize(body):
                if t[0] == 'id' and t[1] in params:
                    toks += [('op', '(')] + args[params.index(t[1])] + \
                        [('op', ')')]
                else:
                    toks.append(t)
            return self.sub(toks)
        if name in self.expanding:
            raise Unreadable('%s is defined in terms of itself' % name)
        body = self.defs.body(name)
        if body is None:
            if name in CONFIG and CONFIG[name] is not None:
                return CONFIG[name]
            if self.cpp:
                return 0
            raise Unreadable('%s is not defined' % name)
        self.expanding.append(name)
        try:
            return self.sub(body)
        finally:
            self.expanding.pop()


# ------------------------------------------------------------ functions

def function_body(text, name, path):
    """The body of C function name in text, comments removed."""
    text = strip_comments(text)
    m = re.search(r'^[\w \t\*]*\b%s\s*\([^)]*\)\s*\{' % re.escape(name), text,
                  re.M)
    if not m:
        raise Unreadable('%s: no function %s()' % (path, name))
    depth, i = 1, m.end()
    while depth:
        if i >= len(text):
            raise Unreadable('%s: %s() does not end' % (path, name))
        depth += {'{': 1, '}': -1}.get(text[i], 0)
        i += 1
    return text[m.end():i - 1]


def statements(body):
    """(brace depth, statement) of a function body, whitespace folded."""
    out, depth, cur = [], 0, ''
    for ch in body:
        if ch == '{':
            depth += 1
            cur = ''
        elif ch == '}':
            depth -= 1
            cur = ''
        elif ch == ';':
            out.append((depth, ' '.join(cur.split())))
            cur = ''
        else:
            cur += ch
    return out


def mask_assignments(body):
    """shadow_X_mask = EXPR; of a function body: {name: EXPR}, or
    {name: None} when one is conditional or set twice."""
    out = {}
    for depth, st in statements(body):
        m = re.match(r'(shadow_\w+_mask)\s*=\s*(.+)$', st)
        if not m:
            continue
        name = m.group(1)
        if depth or name in out:
            out[name] = None     # conditional or set twice: not readable
        else:
            out[name] = m.group(2)
    return out


# --------------------------------------------------------------- kernels

def read_tree(ver):
    cache = os.environ.get('MMUREPLAY_CACHE') or \
        os.path.join(os.path.expanduser('~'), '.cache', 'mmureplay')
    tree = os.path.join(cache, 'ks', ver, 'linux')
    ok = os.path.isdir(os.path.join(tree, '.git')) and subprocess.run(
        ['git', '-C', tree, 'rev-parse', '-q', '--verify',
         'refs/tags/' + TAG], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0
    if not ok:
        sys.exit('test_kernel_masks: no pristine Linux %s tree at %s '
                 '(run kernel-series/check.sh --quick first)' % (ver, tree))
    files = {}
    for path in (F_PAGE_H, F_MMU_H, F_SPTE_H, F_VMX_H, F_HOST_H, F_SPTE_C,
                 F_VMX_C, F_VMX_COMMON_H):
        r = subprocess.run(['git', '-C', tree, 'show', '%s:%s' % (TAG, path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode == 0:
            files[path] = r.stdout
        elif path != F_VMX_COMMON_H:
            sys.exit('test_kernel_masks: Linux %s: %s is missing from %s '
                     '(%s)' % (ver, path, tree, r.stderr.strip()))
    return tree, files


class Kernel:
    """The values one kernel tree gives."""

    def __init__(self, ver, files):
        self.ver = ver
        self.files = files
        self.defs = Defines()
        for path in (F_PAGE_H, F_MMU_H, F_SPTE_H, F_VMX_H, F_HOST_H):
            self.defs.add_file(path, files[path])

    def has(self, name):
        return self.defs.body(name) is not None

    def const(self, name):
        return Evaluator(self.defs).eval(name)

    def masks(self, fname):
        return mask_assignments(function_body(self.files[F_SPTE_C], fname,
                                              F_SPTE_C))

    def shadow(self, fmt, name):
        """shadow_NAME_mask as set for fmt ("npt" or "ept")."""
        full = 'shadow_%s_mask' % name
        chain = ['kvm_mmu_reset_all_pte_masks']
        if fmt == 'ept':
            chain.append('kvm_mmu_set_ept_masks')
        expr, where = None, None
        for fname in chain:
            a = self.masks(fname)
            if full in a:
                if a[full] is None:
                    raise Unreadable('%s: %s() sets %s conditionally or '
                                     'twice' % (F_SPTE_C, fname, full))
                expr, where = a[full], fname
        if expr is None:
            raise Unreadable('%s: neither %s sets %s' %
                             (F_SPTE_C, ' nor '.join(c + '()' for c in chain),
                              full))
        v = Evaluator(self.defs, {'has_ad_bits': 1, 'has_exec_only': 0}
                      ).eval(expr)
        return v, '%s = %s (%s())' % (full, expr, where)

    def ept_violation(self):
        """[(guard, qualification mask, PFERR if set, PFERR if clear)] of
        the error_code statements handle_ept_violation() runs (6.12: in
        __vmx_handle_ept_violation(), vmx/common.h, which it calls); guard
        is the qualification mask of an "if" around the statement, or 0.
        Also returns the file the statements are in."""
        path = F_VMX_C
        body = function_body(self.files[F_VMX_C], 'handle_ept_violation',
                             F_VMX_C)
        if not re.search(r'\berror_code\s*\|?=(?!=)', body) and \
                re.search(r'\b__vmx_handle_ept_violation\s*\(', body):
            path = F_VMX_COMMON_H
            if path not in self.files:
                raise Unreadable('%s: handle_ept_violation() calls '
                                 '__vmx_handle_ept_violation(), and there '
                                 'is no %s' % (F_VMX_C, path))
            body = function_body(self.files[path],
                                 '__vmx_handle_ept_violation', path)
        rows = []
        ev = Evaluator(self.defs)
        for depth, st in statements(body):
            if not re.search(r'\berror_code\s*\|?=(?!=)', st):
                continue
            m = re.match(r'(?:if \(\s*exit_qualification\s*&\s*(\w+)\s*\)'
                         r'\s*)?error_code\s*(\|?=)\s*\(\s*'
                         r'exit_qualification\s*&\s*(.+?)\s*\)\s*'
                         r'(?:!=\s*0\s*)?\?\s*(\w+)\s*:\s*(\w+)$', st)
            if depth or not m or (rows and m.group(2) == '='):
                raise Unreadable('%s: cannot read "%s;"' % (path, st))
            rows.append((ev.eval(m.group(1)) if m.group(1) else 0,
                         ev.eval(m.group(3)), ev.eval(m.group(4)),
                         ev.eval(m.group(5))))
        if not rows:
            raise Unreadable('%s: no error_code statement' % path)
        return path, rows

    def ept_pferr(self, rows, qual):
        """The PFERR value the statements build from qualification qual."""
        v = 0
        for guard, mask, yes, no in rows:
            if not guard or qual & guard:
                v |= yes if qual & mask else no
        return v


# ----------------------------------------------------------------- checks

def hexs(v):
    return '0x%x' % v


def check_kernel(ver, model, kern):
    """Returns (rows, failures) of kernel ver against the model: rows of
    (field, kernel value, its source, model value, status, note)."""
    rows, fails = [], []

    def row(field, kval, source, mval, ok=None, path=F_SPTE_H, note=''):
        if ok is None:
            ok = kval == mval
        status = 'ok' if ok else 'DIFF'
        rows.append((field, hexs(kval) if isinstance(kval, int) else kval,
                     source, hexs(mval) if isinstance(mval, int) else mval,
                     status, note))
        if not ok:
            fails.append('kernel_masks: Linux %s %s: %s: kernel %s (%s), '
                         'model %s' % (ver, path, field, rows[-1][1], source,
                                       rows[-1][3]))

    def guarded(field, path, fn):
        try:
            fn()
        except Unreadable as e:
            rows.append((field, '?', str(e), '?', 'DIFF', ''))
            fails.append('kernel_masks: Linux %s %s: %s: %s' %
                         (ver, path, field, e))

    for fmt in ('npt', 'ept'):
        m = {k: int(v, 16) for k, v in model['formats'][fmt].items()}

        def c(field, name, path, note='', label=None):
            label = '%s.%s' % (fmt, label or field)
            guarded(label, path, lambda: row(
                label, kern.const(name), name, m[field], path=path,
                note=note))

        def s(field, name):
            def go():
                v, src = kern.shadow(fmt, name)
                mv, note = m[field], ''
                if field == 'hw_present' and v & m['ve_suppress']:
                    # 6.12: present EPT SPTEs carry the suppress-#VE bit.
                    mv, note = mv | m['ve_suppress'], \
                        'model: hw_present | ve_suppress'
                row('%s.%s' % (fmt, field), v, src, mv, path=F_SPTE_C,
                    note=note)
            guarded('%s.%s' % (fmt, field), F_SPTE_C, go)

        c('mmu_present', 'SPTE_MMU_PRESENT_MASK', F_SPTE_H)
        s('hw_present', 'present')
        if fmt == 'ept':
            c('readable', 'VMX_EPT_READABLE_MASK', F_VMX_H)
        else:
            c('readable', 'PT_PRESENT_MASK', F_MMU_H)
        c('writable', 'PT_WRITABLE_MASK', F_MMU_H)
        if fmt == 'ept':
            c('writable', 'VMX_EPT_WRITABLE_MASK', F_VMX_H,
              label='writable(vmx.h)')
        s('user', 'user')
        s('exec', 'x')
        s('nx', 'nx')
        if fmt == 'ept' and kern.has('VMX_EPT_SUPPRESS_VE_BIT'):
            # 6.12 (6.1 has no such bit).
            c('ve_suppress', 'VMX_EPT_SUPPRESS_VE_BIT', F_VMX_H)
        c('large', 'PT_PAGE_SIZE_MASK', F_MMU_H)
        s('accessed', 'accessed')
        s('dirty', 'dirty')
        c('ad_mask', 'SPTE_TDP_AD_MASK', F_SPTE_H)
        guarded('%s.ad_disabled' % fmt, F_SPTE_H, lambda: c(
            'ad_disabled', 'SPTE_TDP_AD_DISABLED_MASK'
            if kern.has('SPTE_TDP_AD_DISABLED_MASK')
            else 'SPTE_TDP_AD_DISABLED', F_SPTE_H))
        s('acc_track', 'acc_track')
        s('memtype', 'memtype')
        s('host_writable', 'host_writable')
        s('mmu_writable', 'mmu_writable')
        c('pfn_mask', 'SPTE_BASE_ADDR_MASK', F_SPTE_H,
          note='without CONFIG_DYNAMIC_PHYSICAL_MASK')

        def nonpresent():
            f = '%s.nonpresent' % fmt
            if kern.has('SHADOW_NONPRESENT_VALUE') and \
                    kern.const('SHADOW_NONPRESENT_VALUE'):
                row(f, kern.const('SHADOW_NONPRESENT_VALUE'),
                    'SHADOW_NONPRESENT_VALUE', m['nonpresent'])
            else:
                # 6.1: a non-present SPTE is 0; the model's field is the
                # later kernels' value, which spte_removed() ORs in.
                kv = kern.const('SHADOW_NONPRESENT_VALUE') \
                    if kern.has('SHADOW_NONPRESENT_VALUE') else 0
                row(f, kv, 'SHADOW_NONPRESENT_VALUE' if
                    kern.has('SHADOW_NONPRESENT_VALUE') else
                    'no SHADOW_NONPRESENT_VALUE: 0', m['nonpresent'],
                    ok=kv == 0, note='model holds the 6.12 value')
        guarded('%s.nonpresent' % fmt, F_SPTE_H, nonpresent)

        def removed():
            f = '%s.removed' % fmt
            if kern.has('REMOVED_SPTE'):
                name = 'REMOVED_SPTE'
            elif kern.has('FROZEN_SPTE'):
                name = 'FROZEN_SPTE'
            else:
                raise Unreadable('neither REMOVED_SPTE nor FROZEN_SPTE')
            kv = kern.const(name)
            np = kern.const('SHADOW_NONPRESENT_VALUE') \
                if kern.has('SHADOW_NONPRESENT_VALUE') else 0
            if np:
                # 6.12: FROZEN_SPTE is SHADOW_NONPRESENT_VALUE | 0x5a0.
                row(f, kv, name, m['nonpresent'] | m['removed'],
                    note='model: nonpresent | removed')
            else:
                row(f, kv, name, m['removed'])
        guarded('%s.removed' % fmt, F_SPTE_H, removed)

    def pferr():
        path, stmts = kern.ept_violation()
        fn = 'handle_ept_violation()' if path == F_VMX_C else \
            '__vmx_handle_ept_violation()'
        access = 0
        for name in ('PFERR_PRESENT_MASK', 'PFERR_WRITE_MASK',
                     'PFERR_USER_MASK', 'PFERR_FETCH_MASK'):
            access |= kern.const(name)
        fn += ' & access bits'
        for b in range(12):
            row('ept_qual bit %d' % b,
                kern.ept_pferr(stmts, 1 << b) & access, fn,
                int(model['ept_qual_pferr'][str(b)], 16), path=path)
        for q, v in sorted(model['ept_qual_samples'].items()):
            row('ept_qual %s' % q,
                kern.ept_pferr(stmts, int(q, 16)) & access, fn,
                int(v, 16), path=path)
    guarded('ept_qual', F_VMX_C, pferr)
    return rows, fails


def print_table(ver, tree, rows):
    print('Linux %s (%s, tag %s)' % (ver, tree, TAG))
    w = [max(len(r[i]) for r in rows + [('field', 'kernel', 'source',
                                          'model', 'ok', '')])
         for i in range(4)]
    fmt = '  %%-%ds  %%%ds  %%%ds  %%-5s  %%s' % (w[0], w[1], w[3])
    print(fmt % ('field', 'kernel', 'model', 'ok', 'kernel source'))
    for r in rows:
        print(fmt % (r[0], r[1], r[3], r[4], r[2] +
                     ('  [%s]' % r[5] if r[5] else '')))
    print()


def main():
    if len(sys.argv) < 2:
        sys.exit('usage: test_kernel_masks.py MODEL_DUMP [VER...]')
    r = subprocess.run([sys.argv[1]], stdout=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        sys.exit('test_kernel_masks: %s exited %d' % (sys.argv[1],
                                                      r.returncode))
    model = json.loads(r.stdout)
    fails = []
    for ver in sys.argv[2:] or ['6.1', '6.12']:
        tree, files = read_tree(ver)
        rows, f = check_kernel(ver, model, Kernel(ver, files))
        print_table(ver, tree, rows)
        fails += f
    for f in fails:
        print(f, file=sys.stderr)
    if fails:
        sys.exit(1)
    print('ok')


if __name__ == '__main__':
    main()
