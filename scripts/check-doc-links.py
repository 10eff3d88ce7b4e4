#!/usr/bin/env python3
"""check-doc-links.py [--self-test] [ROOT]: every relative link in the
project's Markdown (docs/*.md and every README.md under ROOT, build and
hidden folders skipped) names a file that exists, and every #anchor one
of the target's headings, slugged as GitHub does (lower case, punctuation
but '-' and '_' dropped, spaces to '-', repeats numbered -1, -2, ...).
Links inside fenced code are not links. Prints each broken link as
FILE:LINE: and exits 1 if any; --self-test runs it on a small tree with
one broken file link and one broken anchor and exits 0 only when both are
found. Stdlib only."""
import os
import re
import sys
import tempfile

LINK = re.compile(r"\]\(([^)\s]*)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def slug(text):
    text = re.sub(r"[`*]", "", text.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_code(path):
    """(line number, text) of the lines not in fenced code blocks."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            m = re.match(r"^\s*(```|~~~)", line)
            if m:
                fence = None if fence == m.group(1) else (fence or m.group(1))
                continue
            if fence is None:
                yield no, line


def anchors(path, cache):
    if path not in cache:
        seen, out = {}, set()
        for _, line in lines_outside_code(path):
            m = HEADING.match(line)
            if m:
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f"{s}-{n}")
        cache[path] = out
    return cache[path]


def markdown_files(root):
    out = []
    for d, subdirs, files in os.walk(root):
        subdirs[:] = sorted(s for s in subdirs if not s.startswith(".")
                            and not s.startswith("build")
                            and s != "node_modules")
        rel = os.path.relpath(d, root)
        for f in sorted(files):
            if f == "README.md" or (rel == "docs" and f.endswith(".md")):
                out.append(os.path.join(d, f))
    return out


def check(root):
    cache, bad, links = {}, [], 0
    for md in markdown_files(root):
        for no, line in lines_outside_code(md):
            for m in LINK.finditer(line):
                target = m.group(1)
                if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, mailto:, ...
                links += 1
                name, _, frag = target.partition("#")
                path = os.path.normpath(os.path.join(os.path.dirname(md),
                                                     name)) if name else md
                where = f"{os.path.relpath(md, root)}:{no}"
                if not os.path.exists(path):
                    bad.append(f"{where}: {target}: no such file")
                elif frag and path.endswith(".md") and \
                        frag not in anchors(path, cache):
                    bad.append(f"{where}: {target}: no heading "
                               f"'#{frag}' in {os.path.relpath(path, root)}")
    return bad, links


def self_test():
    with tempfile.TemporaryDirectory() as t:
        os.mkdir(os.path.join(t, "docs"))
        with open(os.path.join(t, "docs", "a.md"), "w") as f:
            f.write("# A: the `first` heading\n\n## Twice\n\n## Twice\n\n"
                    "[ok](b.md#b-heading) [ok](#twice-1) [ok](#a-the-first-"
                    "heading)\n[gone](missing.md) [bad](b.md#nowhere)\n"
                    "```\n[in code](nowhere.md)\n```\n")
        with open(os.path.join(t, "docs", "b.md"), "w") as f:
            f.write("# B heading\n")
        bad, links = check(t)
        want = ["docs/a.md:8: missing.md: no such file",
                "docs/a.md:8: b.md#nowhere: no heading '#nowhere' in "
                "docs/b.md"]
        if bad != want or links != 5:
            print("check-doc-links: self-test failed:", bad, links)
            return 1
        print("check-doc-links: self-test found both broken links")
        return 0


def main(argv):
    if "--self-test" in argv:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    bad, links = check(root)
    for b in bad:
        print(b)
    print(f"check-doc-links: {links} relative links in "
          f"{len(markdown_files(root))} Markdown files, {len(bad)} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
