#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare the declarations of two P4-16 header files.

koi ships its own architecture headers (p4include/core.p4, v1model.p4, ubpf_model.p4, ebpf_model.p4,
xdp_model.p4, psa.p4, the last one compared with p4c's bmv2/psa.p4) that must be
declaration-compatible with p4c's headers of the same names. This tool checks that claim: it reduces
each file to the list of what it declares, and reports every declaration present in one file but not
the other, every declaration whose signature differs, and every difference in declaration order.

How a file is reduced (standard library only, no external preprocessor):

1. Comments are removed and backslash-newline continuations joined.
2. A small cpp-compatible preprocessor evaluates #if/#ifdef/#ifndef/#elif/#else/#endif and
   #define/#undef, and expands object-like macros in the code. It does this once per
   *configuration*: a set of macros predefined as if the including program had written
   `#define V1MODEL_VERSION 20200408` before the #include. #include lines are not followed; they
   are kept as items ("#include core.p4", quotes and angle brackets alike) so that a missing include
   is reported. Active #define lines are kept as items too (include guards, V1MODEL_METER_COLOR_*).
3. The code is tokenised and split into top-level declarations (ending at ';' or at the '}' that
   closes their body). Each keeps its annotations. Bodies are split into members: extern methods
   and constructors, struct/header fields, and enum/error/match_kind members.
4. Each item is keyed by its kind and name (overloads are numbered in declaration order) and its
   signature is its token sequence, so whitespace and comments never matter but every type,
   parameter name, direction, default value and annotation does. Annotations on one declaration
   are compared as a set (their order carries no meaning).

koi's documented extensions (`EXTENSIONS`: v1model's FNV members of HashAlgorithm,
docs/v1model.md) are the only items allowed in ours alone, and only after every member p4c
declares in the same declaration, so that p4c's members keep their order.

The tool also checks include-guard behaviour: preprocessing a file twice in a row (as a second
#include does) must declare nothing the second time.

Usage:
    compare_headers.py OURS.p4 THEIRS.p4
    compare_headers.py OURS_DIR THEIRS_DIR [--names core.p4 v1model.p4 ubpf_model.p4]
    options: -D NAME=VALUE (repeatable; one configuration per -D, replaces the built-in set),
             --config 'A=1,B=2' (a configuration with several macros), --dump, -q

Exit status: 0 when the files declare the same things in every configuration, 1 when there are
differences (listed on stdout), 2 on a usage or parse error.
"""

import argparse
import os
import re
import sys

DEFAULT_NAMES = ["core.p4", "v1model.p4", "ubpf_model.p4", "ebpf_model.p4", "xdp_model.p4"]

# Configurations evaluated by default: nothing predefined, then the version macros of the headers at
# and around the values where p4c's headers change their declarations.
DEFAULT_CONFIGS = [
    {},
    {"V1MODEL_VERSION": "20180101"},
    {"V1MODEL_VERSION": "20200407"},
    {"V1MODEL_VERSION": "20200408"},
    {"V1MODEL_VERSION": "20250101"},
    {"UBPF_MODEL_VERSION": "20200304"},
    {"UBPF_MODEL_VERSION": "20200515"},
]


# koi's extensions of p4c's headers, by file name: items only ours declares, each after every
# member of its declaration that p4c's declares (docs/v1model.md).
EXTENSIONS = {
    "v1model.p4": [
        "enum HashAlgorithm :: fnv1a_32",
        "enum HashAlgorithm :: fnv1a_64",
        "enum HashAlgorithm :: fnv1_32",
        "enum HashAlgorithm :: fnv1_64",
        "enum HashAlgorithm :: fnv1a_32_signed",
        "enum HashAlgorithm :: fnv1a_64_signed",
        "enum HashAlgorithm :: fnv1_32_signed",
        "enum HashAlgorithm :: fnv1_64_signed",
        "enum HashAlgorithm :: hashkit_one_at_a_time",
        "enum HashAlgorithm :: hashkit_md5",
        "enum HashAlgorithm :: hashkit_hsieh",
        "enum HashAlgorithm :: hashkit_murmur",
        "enum HashAlgorithm :: hashkit_jenkins",
    ],
}


class HeaderError(Exception):
    """A file this tool cannot reduce (bad preprocessor line, unbalanced brackets, ...)."""


# ----------------------------------------------------------------------------------------------
# Lexing


def strip_comments(text):
    """Removes // and /* */ comments (not inside string literals) and joins continuation lines.

    Newlines are kept, so that line-oriented preprocessing still sees the same lines."""
    text = text.replace("\r\n", "\n").replace("\\\n", "")
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\":
                    j += 1
                if j < n and text[j] == "\n":
                    raise HeaderError("unterminated string literal")
                j += 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise HeaderError("unterminated /* comment")
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>"(?:\\.|[^"\\])*")
  | (?P<num>\d\w*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op>&&&|\.\.|&&|\|\||==|!=|<=|>=|\+\+|\|\+\||\|-\||.)
    """,
    re.VERBOSE | re.DOTALL,
)


def tokenize(text):
    toks = []
    for m in TOKEN_RE.finditer(text):
        if m.lastgroup != "ws":
            toks.append(m.group())
    return toks


def is_ident(tok):
    return re.fullmatch(r"[A-Za-z_]\w*", tok) is not None


# ----------------------------------------------------------------------------------------------
# Preprocessing


class Directive:
    """A preprocessor line kept as a comparable item (#include, #define, #undef, #pragma, ...)."""

    def __init__(self, key, sig):
        self.key = key
        self.sig = sig


# Operators of #if expressions that mean the same in Python.
IF_OPERATORS = ("(", ")", "+", "-", "*", "%", "<", ">", "<=", ">=", "==", "!=", "&", "|", "^", "~")


class Preprocessor:
    """Just enough of cpp for architecture headers: conditionals and object-like macros."""

    def __init__(self, predefined):
        # name -> (params or None, replacement tokens)
        self.macros = {k: (None, tokenize(v)) for k, v in predefined.items()}

    def expand(self, toks, hide=frozenset()):
        out = []
        for t in toks:
            m = self.macros.get(t)
            if m is not None and t not in hide and m[0] is None:
                out.extend(self.expand(m[1], hide | {t}))
            else:
                out.append(t)
        return out

    def eval_condition(self, toks, where):
        # Replace defined(X) / defined X before macro expansion.
        res, i = [], 0
        while i < len(toks):
            t = toks[i]
            if t == "defined":
                if i + 1 < len(toks) and toks[i + 1] == "(":
                    if i + 3 >= len(toks) or toks[i + 3] != ")":
                        raise HeaderError(f"{where}: malformed defined()")
                    name, i = toks[i + 2], i + 4
                elif i + 1 < len(toks):
                    name, i = toks[i + 1], i + 2
                else:
                    raise HeaderError(f"{where}: malformed defined")
                res.append("1" if name in self.macros else "0")
            else:
                res.append(t)
                i += 1
        res = self.expand(res)
        py = []
        for t in res:
            if is_ident(t):
                py.append("0")  # cpp: an identifier that is not a macro evaluates to 0
            elif re.fullmatch(r"\d\w*", t):
                py.append(str(int(re.sub(r"[uUlL]+$", "", t), 0)))
            elif t == "&&":
                py.append(" and ")
            elif t == "||":
                py.append(" or ")
            elif t == "!":
                py.append(" not ")
            elif t == "/":
                py.append("//")
            elif t in IF_OPERATORS:
                py.append(t)
            else:
                raise HeaderError(f"{where}: unsupported token {t!r} in #if expression")
        try:
            return bool(eval(" ".join(py), {"__builtins__": {}}, {}))
        except Exception as e:  # noqa: BLE001 - report any evaluation failure the same way
            raise HeaderError(f"{where}: cannot evaluate #if expression: {' '.join(res)} ({e})")

    def run(self, text, name):
        """Returns the tokens of the active code, with kept directives as Directive objects."""
        out = []
        # Each entry: [parent_active, some_branch_taken, this_branch_active, else_seen]
        stack = []
        active = True
        for lineno, line in enumerate(strip_comments(text).split("\n"), 1):
            where = f"{name}:{lineno}"
            s = line.strip()
            if not s.startswith("#"):
                if active:
                    out.extend(self.expand(tokenize(line)))
                continue
            m = re.match(r"#\s*(\w*)\s*(.*)$", s)
            d, rest = m.group(1), m.group(2).strip()
            if d in ("if", "ifdef", "ifndef"):
                if not active:
                    cond = False
                elif d == "if":
                    cond = self.eval_condition(tokenize(rest), where)
                else:
                    macro = rest.split()[0] if rest else ""
                    if not is_ident(macro):
                        raise HeaderError(f"{where}: #{d} needs a macro name")
                    cond = (macro in self.macros) == (d == "ifdef")
                stack.append([active, cond, cond, False])
                active = active and cond
            elif d == "elif":
                if not stack or stack[-1][3]:
                    raise HeaderError(f"{where}: #elif without #if")
                top = stack[-1]
                cond = top[0] and not top[1] and self.eval_condition(tokenize(rest), where)
                top[1] = top[1] or cond
                top[2] = cond
                active = cond
            elif d == "else":
                if not stack or stack[-1][3]:
                    raise HeaderError(f"{where}: #else without #if")
                top = stack[-1]
                top[2] = top[0] and not top[1]
                top[1], top[3] = True, True
                active = top[2]
            elif d == "endif":
                if not stack:
                    raise HeaderError(f"{where}: #endif without #if")
                active = stack.pop()[0]
            elif not active:
                continue
            elif d == "define":
                m2 = re.match(r"([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)$", rest)
                if not m2:
                    raise HeaderError(f"{where}: malformed #define")
                mname, params, body = m2.group(1), m2.group(2), m2.group(3)
                ptoks = None if params is None else [p for p in tokenize(params[1:-1]) if p != ","]
                self.macros[mname] = (ptoks, tokenize(body))
                shown = mname + ("" if params is None else "(" + ", ".join(ptoks) + ")")
                out.append(Directive(f"#define {shown}", " ".join([shown] + tokenize(body))))
            elif d == "undef":
                self.macros.pop(rest.split()[0] if rest else "", None)
                out.append(Directive(f"#undef {rest}", rest))
            elif d == "include":
                m2 = re.match(r'["<]([^">]+)[">]', rest)
                if not m2:
                    raise HeaderError(f"{where}: malformed #include")
                target = os.path.basename(m2.group(1))
                out.append(Directive(f"#include {target}", target))
            elif d in ("pragma", "error", "warning", "line"):
                out.append(Directive(f"#{d} {rest}", rest))
            elif d == "":
                pass  # the null directive
            else:
                raise HeaderError(f"{where}: unknown directive #{d}")
        if stack:
            raise HeaderError(f"{name}: unterminated #if")
        return out


# ----------------------------------------------------------------------------------------------
# Splitting into declarations

OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


def split_top_level(toks, name):
    """Splits a token list into top-level declarations; directives are their own items."""
    decls, cur, stack = [], [], []
    i = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        if isinstance(t, Directive):
            decls.append(t)
            continue
        cur.append(t)
        if t in OPEN:
            stack.append(OPEN[t])
        elif t in CLOSE:
            if not stack or stack.pop() != t:
                raise HeaderError(f"{name}: unbalanced {t!r} in: {' '.join(cur[-30:])}")
            if t == "}" and not stack:
                if i < len(toks) and toks[i] == ";":
                    cur.append(";")
                    i += 1
                decls.append(cur)
                cur = []
        elif t == ";" and not stack:
            decls.append(cur)
            cur = []
    if stack or cur:
        raise HeaderError(f"{name}: unterminated declaration: {' '.join(cur[:30])}")
    return decls


def take_annotations(toks):
    """Splits leading annotations (@name, @name(...), @name[...]) from a token list."""
    anns, i = [], 0
    while i < len(toks) and toks[i] == "@":
        if i + 1 >= len(toks):
            raise HeaderError("dangling '@'")
        j = i + 2
        if j < len(toks) and toks[j] in ("(", "["):
            j = match_bracket(toks, j) + 1
        anns.append(" ".join(toks[i:j]).replace("@ ", "@", 1))
        i = j
    return anns, toks[i:]


def match_bracket(toks, i):
    """Index of the bracket closing the one at toks[i]."""
    stack = []
    for j in range(i, len(toks)):
        t = toks[j]
        if t in OPEN:
            stack.append(OPEN[t])
        elif t in CLOSE:
            if not stack or stack.pop() != t:
                raise HeaderError(f"unbalanced {t!r}")
            if not stack:
                return j
    raise HeaderError("unclosed bracket")


def split_members(toks, sep):
    """Splits a body (without its braces) at depth-0 separators; a trailing separator is fine."""
    parts, cur, depth = [], [], 0
    for t in toks:
        if t in OPEN:
            depth += 1
        elif t in CLOSE:
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        if sep == ";":
            raise HeaderError(f"member without ';': {' '.join(cur)}")
        parts.append(cur)
    return parts


def callable_name(toks):
    """Name of a function, method or constructor: the identifier before its parameter list."""
    depth = 0
    for i, t in enumerate(toks):
        if t == "(" and depth == 0:
            j = i - 1
            if j >= 0 and toks[j] == ">":  # skip type parameters <...>
                level = 0
                while j >= 0:
                    if toks[j] == ">":
                        level += 1
                    elif toks[j] == "<":
                        level -= 1
                        if level == 0:
                            break
                    j -= 1
                j -= 1
            if j >= 0 and is_ident(toks[j]):
                return toks[j]
            break
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
    return None


class Item:
    def __init__(self, key, sig, parent=None):
        self.key = key
        self.sig = sig
        self.parent = parent

    def __repr__(self):
        return f"{self.key}: {self.sig}"


def signature(anns, toks):
    return " ".join(sorted(anns) + list(toks))


# Declarations whose `{ ... }` body is split into members, and the separator of their members.
MEMBER_SEPARATOR = {
    "error": ",", "match_kind": ",", "enum": ",",
    "struct": ";", "header": ";", "header_union": ";", "extern": ";",
}
# Declaration keywords used as the kind of an item; anything else is a "decl".
KINDS = set(MEMBER_SEPARATOR) | {"parser", "control", "package", "action", "typedef", "type",
                                 "const"}


def reduce_decl(toks, counts):
    """Turns one top-level declaration into items: the declaration itself, then its members."""
    anns, rest = take_annotations(toks)
    if not rest:
        raise HeaderError(f"annotation without declaration: {' '.join(toks)}")
    kw = rest[0]
    body = None
    if "{" in rest and kw in MEMBER_SEPARATOR:
        b = rest.index("{")
        e = match_bracket(rest, b)
        head, body = rest[:b], rest[b + 1 : e]
    else:
        head = rest

    if kw in ("error", "match_kind"):
        name = kw
    elif kw in ("enum", "struct", "header", "header_union"):
        idents = [t for t in head if is_ident(t)]
        name = idents[-1]
    elif kw == "extern" and body is not None:
        name = head[1]
    elif kw in ("parser", "control", "package", "action"):
        name = head[1]
    elif kw in ("typedef", "type"):
        name = [t for t in head if is_ident(t)][-1]
    elif kw == "const":
        name = head[head.index("=") - 1] if "=" in head else head[-2]
    else:
        name = callable_name(head) or next((t for t in head if is_ident(t) and t != "extern"), "?")

    kind = kw if kw in KINDS else "decl"
    if kind == "extern" and body is None:
        kind = "extern function"
    base = f"{kind} {name}"
    counts[base] = counts.get(base, 0) + 1
    key = base if counts[base] == 1 else f"{base} #{counts[base]}"
    # error and match_kind blocks may appear several times (core.p4, then v1model.p4): number all.
    if kind in ("error", "match_kind"):
        key = f"{base} #{counts[base]}"
    items = [Item(key, signature(anns, head if body is not None else rest))]
    if body is None:
        return items

    sep = MEMBER_SEPARATOR[kind]
    mcounts = {}
    for m in split_members(body, sep):
        manns, mrest = take_annotations(m)
        if not mrest:
            raise HeaderError(f"{key}: annotation without member")
        if kind == "extern":
            mname = callable_name(mrest) or mrest[-1]
        elif sep == ";":
            mname = mrest[-1]
        else:
            mname = mrest[0]
        mcounts[mname] = mcounts.get(mname, 0) + 1
        mkey = f"{key} :: {mname}" + ("" if mcounts[mname] == 1 else f" #{mcounts[mname]}")
        msig = signature(manns, mrest + ([";"] if sep == ";" else []))
        items.append(Item(mkey, msig, parent=key))
    return items


def reduce_text(text, name, config):
    """All items a file declares in one configuration (macros predefined as in `config`)."""
    pp = Preprocessor(config)
    toks = pp.run(text, name)
    items, counts = [], {}
    for d in split_top_level(toks, name):
        if isinstance(d, Directive):
            counts[d.key] = counts.get(d.key, 0) + 1
            key = d.key if counts[d.key] == 1 else f"{d.key} #{counts[d.key]}"
            items.append(Item(key, d.sig))
        else:
            items.extend(reduce_decl(d, counts))
    # Include guard: a second inclusion, with the macros the first one left, must add nothing.
    again = pp.run(text, name)
    if again:
        leftovers = [t.key if isinstance(t, Directive) else t for t in again][:12]
        sig = "second #include declares again: " + " ".join(leftovers)
        items.append(Item("<include guard>", sig))
    return items


# ----------------------------------------------------------------------------------------------
# Comparing


def compare_items(ours, theirs, extensions=()):
    """Differences between two item lists, as human-readable lines. `extensions`: keys that
    may be in ours only, after every other member of their parent."""
    diffs = []
    omap = {i.key: i for i in ours}
    tmap = {i.key: i for i in theirs}
    for i in theirs:
        if i.key not in omap:
            diffs.append(f"missing from ours: {i.key}\n      theirs: {i.sig}")
    for n, i in enumerate(ours):
        if i.key not in tmap and i.key in extensions:
            later = [j.key for j in ours[n + 1:] if j.parent == i.parent and j.key in tmap]
            if i.parent is None or later:
                diffs.append(f"extension before p4c's members: {i.key}\n      then:   "
                             f"{', '.join(later[:4])}")
        elif i.key not in tmap:
            diffs.append(f"only in ours: {i.key}\n      ours:   {i.sig}")
        elif tmap[i.key].sig != i.sig:
            diffs.append(
                f"differs: {i.key}\n      ours:   {i.sig}\n      theirs: {tmap[i.key].sig}"
            )
    # Order: top-level items among themselves, and members within each parent.
    groups = {}
    for side, lst in (("ours", ours), ("theirs", theirs)):
        for i in lst:
            groups.setdefault((side, i.parent), []).append(i.key)
    for (side, parent), keys in groups.items():
        if side != "ours":
            continue
        other = groups.get(("theirs", parent), [])
        common = set(keys) & set(other)
        a = [k for k in keys if k in common]
        b = [k for k in other if k in common]
        if a != b:
            pos = next(n for n in range(len(a)) if a[n] != b[n])
            where = f"members of {parent}" if parent else "top-level declarations"
            diffs.append(
                f"order differs among {where} at position {pos}:\n"
                f"      ours:   {', '.join(a[pos:pos + 4])} ...\n"
                f"      theirs: {', '.join(b[pos:pos + 4])} ..."
            )
    return diffs


def config_label(config):
    return ",".join(f"{k}={v}" for k, v in config.items()) or "default"


def compare_files(ours_path, theirs_path, configs, quiet=False, dump=False):
    """Compares two files in every configuration; prints a report; returns the difference count."""
    with open(ours_path, encoding="utf-8") as f:
        ours_text = f.read()
    with open(theirs_path, encoding="utf-8") as f:
        theirs_text = f.read()
    total = 0
    label = os.path.basename(ours_path)
    for config in configs:
        ours = reduce_text(ours_text, ours_path, config)
        theirs = reduce_text(theirs_text, theirs_path, config)
        if dump:
            print(f"== {ours_path} [{config_label(config)}]: {len(ours)} items")
            for i in ours:
                print(f"  {i.key}: {i.sig}")
        extensions = EXTENSIONS.get(label, ())
        diffs = compare_items(ours, theirs, extensions)
        total += len(diffs)
        if diffs:
            print(f"{label} [{config_label(config)}]: {len(diffs)} difference(s)")
            for d in diffs:
                print(f"  - {d}")
        elif not quiet:
            extra = sum(1 for i in ours if i.key in extensions)
            same = len(ours) - extra
            more = f", {extra} koi extension(s)" if extra else ""
            print(f"{label} [{config_label(config)}]: OK, {same} items identical{more}")
    return total


def parse_config(text):
    config = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, value = part.partition("=")
        if not is_ident(name):
            raise HeaderError(f"bad macro name in configuration: {part!r}")
        config[name] = value if value else "1"
    return config


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare the declarations of two P4 header files.")
    ap.add_argument("ours", help="our header file, or a directory of headers")
    ap.add_argument("theirs", help="the reference header file, or a directory of headers")
    ap.add_argument("--names", nargs="+", default=DEFAULT_NAMES,
                    help="header names to compare when both arguments are directories")
    ap.add_argument("-D", dest="defines", action="append", default=[],
                    help="NAME=VALUE: evaluate with this macro predefined (one configuration each)")
    ap.add_argument("--config", action="append", default=[],
                    help="'A=1,B=2': one configuration with several predefined macros")
    ap.add_argument("--dump", action="store_true", help="print the items of our file(s)")
    ap.add_argument("-q", "--quiet", action="store_true", help="print differences only")
    args = ap.parse_args(argv)

    try:
        configs = [parse_config(d) for d in args.defines] + [parse_config(c) for c in args.config]
        if not configs:
            configs = DEFAULT_CONFIGS
        if os.path.isdir(args.ours) and os.path.isdir(args.theirs):
            pairs = [(os.path.join(args.ours, n), os.path.join(args.theirs, n)) for n in args.names]
        elif os.path.isfile(args.ours) and os.path.isfile(args.theirs):
            pairs = [(args.ours, args.theirs)]
        else:
            ap.error("give two files or two directories")
        total = 0
        for o, t in pairs:
            total += compare_files(o, t, configs, quiet=args.quiet, dump=args.dump)
    except (HeaderError, OSError) as e:
        print(f"compare_headers: error: {e}", file=sys.stderr)
        return 2
    if total:
        print(f"{total} difference(s)")
        return 1
    if not args.quiet:
        print("no differences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
