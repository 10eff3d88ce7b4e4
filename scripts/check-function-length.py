#!/usr/bin/env python3
"""check-function-length.py: no function in src/ over 120 lines (issue #17).

Finds the function definitions of every C file under src/ with a brace
counter (comments, strings, character literals and preprocessor lines are
blanked first) and measures each from the line of its name to its closing
brace. Fails, listing them, for functions over the limit that are not in
scripts/function-length-allowlist.txt ("path:function  reason" lines; each
entry must still be over the limit, so the list cannot go stale).

    scripts/check-function-length.py [--limit 120] [--list N] [ROOT]

--list N prints the N longest functions and exits 0.
"""
import os
import re
import sys

LIMIT = 120
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else"}


def blank(text):
    """Comments, strings, chars and preprocessor lines as spaces; newlines
    kept, so line numbers stay."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # a directive, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        line_start = c == "\n"
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, last line) of each function defined in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank(f.read())
    found = []
    depth = 0
    head_start = 0  # where the current top-level item began
    i = 0
    fn = None
    while i < len(text):
        c = text[i]
        if c == "{":
            if depth == 0:
                head = text[head_start:i]
                m = None
                if "(" in head and "=" not in head.split("(")[0]:
                    # the declarator: the last identifier before the "(" of
                    # the outermost parameter list
                    par = head.rfind(")")
                    lvl, k = 0, par
                    while k >= 0:
                        if head[k] == ")":
                            lvl += 1
                        elif head[k] == "(":
                            lvl -= 1
                            if lvl == 0:
                                break
                        k -= 1
                    names = [x for x in IDENT.finditer(head[:k])
                             if x.group() not in KEYWORDS]
                    m = names[-1] if names else None
                if m:
                    line = text.count("\n", 0, head_start + m.start()) + 1
                    fn = (m.group(), line)
                else:
                    fn = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if fn:
                    found.append((fn[0], fn[1], text.count("\n", 0, i) + 1))
                fn = None
                head_start = i + 1
        elif c == ";" and depth == 0:
            head_start = i + 1
        i += 1
    return found


def main(argv):
    limit, listn, root = LIMIT, 0, None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--limit":
            limit = int(args.pop(0))
        elif a == "--list":
            listn = int(args.pop(0))
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-"):
            print(f"check-function-length: unknown option {a}; see --help",
                  file=sys.stderr)
            return 2
        else:
            root = a
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    allow = {}
    allow_path = os.path.join(root, "scripts", "function-length-allowlist.txt")
    if os.path.exists(allow_path):
        with open(allow_path) as f:
            for ln in f:
                ln = ln.strip()
                if ln and not ln.startswith("#"):
                    allow[ln.split()[0]] = ln
    rows = []
    for d, _, files in os.walk(os.path.join(root, "src")):
        for fn in sorted(files):
            if fn.endswith(".c"):
                p = os.path.join(d, fn)
                rel = os.path.relpath(p, root)
                for name, a, b in functions(p):
                    rows.append((b - a + 1, rel, name, a))
    rows.sort(reverse=True)
    if listn:
        for n, rel, name, a in rows[:listn]:
            print(f"{n:5d}  {rel}:{a}  {name}")
        return 0
    bad = [r for r in rows if r[0] > limit and f"{r[1]}:{r[2]}" not in allow]
    over = {f"{r[1]}:{r[2]}" for r in rows if r[0] > limit}
    stale = [k for k in allow if k not in over]
    for n, rel, name, a in bad:
        print(f"{rel}:{a}: {name} is {n} lines, over {limit}: split it into "
              f"named steps (or justify it in "
              f"scripts/function-length-allowlist.txt)")
    for k in stale:
        print(f"scripts/function-length-allowlist.txt: {k} is not over "
              f"{limit} lines (or gone): remove the entry")
    print(f"{len(rows)} functions in src/, longest {rows[0][0]} lines "
          f"({rows[0][1]}:{rows[0][2]}); {len(bad)} over {limit} lines "
          f"unlisted, {len(allow)} allowed, {len(stale)} stale")
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
