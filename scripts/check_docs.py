#!/usr/bin/env python3
"""Checks that the documents and the committed results agree, without a GPU.

    python3 scripts/check_docs.py            # exit status 1 and one line per problem
    python3 scripts/check_docs.py --self-test

Rules (bench/README.md states the policy they enforce):
  1. every relative Markdown link in a tracked .md file resolves: the file exists and, where
     the link names a heading (`doc.md#some-heading`), that heading does;
  2. every result or profile (bench/results/, bench/profiles/) that a tracked file names is
     committed, or is in the history commit docs/notes/README.md names for removed files; a
     name written after `<commit>:` is a git-history reference and is not checked;
  3. every committed result or profile is named in full by some tracked file other than
     bench/README.md: a file nobody cites does not describe the current state and belongs to
     git history;
  4. bench/README.md's index names every result (bench/results/) that README.md or a
     docs/*.md design document cites;
  5. every repository path a document writes in backticks (`src/...`, `scripts/...`,
     `suites/...`) is a tracked file or folder; patterns (`*`, `<name>`) are not checked.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DATA_DIRS = ("bench/results", "bench/profiles")
INDEX = "bench/README.md"
SELF = "scripts/check_docs.py"
# Text files that may cite results: documents, sources, scripts, suites.
TEXT_EXTENSIONS = (".md", ".py", ".sh", ".cpp", ".h", ".cu", ".cuh", ".txt", ".cmake", ".toml")

LINK = re.compile(r"\]\(([^)\s]+)\)")
# A data file's name: <gpu>-<date>-... or ncu-..., with an extension.
DATA_NAME = re.compile(r"(?<![\w./-])((?:\.\.?/|[\w-]+/)*)((?:(?:h100|h200|h100-h200)-\d{4}-\d\d-\d\d|ncu)-[\w.-]+?\.(?:json|txt|csv|patch|tgz))")
HISTORY_REF = re.compile(r"[0-9a-f]{7,40}(?:\^|~[0-9]*)*:$")
# docs/notes/README.md: "Every one of them is in commit <hash>".
HISTORY_COMMIT = re.compile(r"Every one of them is in commit ([0-9a-f]{7,40})")
FENCE = re.compile(r"^(```|~~~)")


def heading_slug(text):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", text.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(markdown):
    slugs, counts, fenced = set(), {}, False
    for line in markdown.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = heading_slug(m.group(1))
            n = counts.get(slug, 0)
            counts[slug] = n + 1
            slugs.add(slug if n == 0 else f"{slug}-{n}")
    return slugs


def strip_code_blocks(markdown):
    out, fenced = [], False
    for line in markdown.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def check_links(files, read):
    problems = []
    anchor_cache = {}
    for path in files:
        if not path.endswith(".md"):
            continue
        for target in LINK.findall(strip_code_blocks(read(path))):
            if re.match(r"^[a-z]+:", target) or target.startswith("<"):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            resolved = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                        if file_part else path)
            if not os.path.exists(os.path.join(ROOT, resolved)):
                problems.append(f"{path}: link to a missing file: {target}")
                continue
            if anchor and resolved.endswith(".md"):
                if resolved not in anchor_cache:
                    anchor_cache[resolved] = anchors_of(read(resolved))
                if anchor not in anchor_cache[resolved]:
                    problems.append(f"{path}: link to a missing heading: {target}")
    return problems


CODE_PATH = re.compile(r"`((?:src|include|scripts|suites|tools|tests|docs|lab|python|examples|cmake|\.ci)"
                       r"/[\w./-]+)`")


def check_paths(files, read):
    tracked = set(files)
    folders = {os.path.dirname(f) for f in files}
    for f in list(folders):
        while f:
            f = os.path.dirname(f)
            folders.add(f)
    problems = []
    for path in files:
        if not path.endswith(".md"):
            continue
        for name in CODE_PATH.findall(strip_code_blocks(read(path))):
            name = name.rstrip("/.")
            if name not in tracked and name not in folders:
                problems.append(f"{path}: names {name}, which is not in the tree")
    return problems


def data_mentions(text):
    """Names of data files a text mentions, leaving out git-history references."""
    names = set()
    for m in DATA_NAME.finditer(text):
        if HISTORY_REF.search(text[max(0, m.start() - 48):m.start()]):
            continue
        names.add(m.group(2))
    return names


def in_history(commit, name):
    """Whether a removed file is in the history commit; None where the clone lacks it."""
    if not commit:
        return False
    if subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT,
                      capture_output=True).returncode != 0:
        return None
    for folder in DATA_DIRS:
        if subprocess.run(["git", "cat-file", "-e", f"{commit}:{folder}/{name}"], cwd=ROOT,
                          capture_output=True).returncode == 0:
            return True
    return False


def check_data(files, read, data_files, index_text, history_commit=None):
    problems = []
    cited_by = {}
    for path in files:
        if (path.startswith(DATA_DIRS) or not path.endswith(TEXT_EXTENSIONS)
                or path == SELF):
            continue  # the data themselves, binaries, and this script's test names
        for name in data_mentions(read(path)):
            cited_by.setdefault(name, set()).add(path)
    present = {os.path.basename(f) for f in data_files}
    results = {os.path.basename(f) for f in data_files if f.startswith("bench/results/")}
    for name, paths in sorted(cited_by.items()):
        if name not in present and in_history(history_commit, name) is False:
            problems.append(f"{', '.join(sorted(paths))}: names {name}, which is neither "
                            f"committed nor in the history commit {history_commit}")
    for name in sorted(present):
        if not (cited_by.get(name, set()) - {INDEX}):
            problems.append(f"{name}: committed but cited by no document (git history keeps it)")
    index_names = data_mentions(index_text)
    for name, paths in sorted(cited_by.items()):
        design = [p for p in paths if p == "README.md" or re.match(r"^docs/[^/]+\.md$", p)]
        if design and name in results and name not in index_names:
            problems.append(f"{INDEX}: its index lacks {name} (cited by {', '.join(design)})")
    return problems


def tracked_files():
    out = subprocess.check_output(["git", "ls-files"], cwd=ROOT, text=True)
    return [f for f in out.splitlines() if os.path.isfile(os.path.join(ROOT, f))]


def read_file(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def self_test():
    assert heading_slug("Batch invariance") == "batch-invariance"
    assert heading_slug("`anvil-plan` M N K") == "anvil-plan-m-n-k"
    assert heading_slug("Python quick start") == "python-quick-start"
    assert anchors_of("# A\n## A\n```\n# not\n```\n") == {"a", "a-1"}
    text = ("see bench/results/h200-2026-12-02-abc1234-llm-bf16.json and "
            "`git show cfa5d85:bench/results/h200-2026-11-30-s17-x.json`, "
            "ncu-ladder-01-naive-square-4096.txt")
    assert data_mentions(text) == {"h200-2026-12-02-abc1234-llm-bf16.json",
                                   "ncu-ladder-01-naive-square-4096.txt"}, data_mentions(text)
    files = ["README.md", "bench/README.md", "bench/results/h200-2026-01-01-a.json",
             "bench/results/h200-2026-01-01-b.json"]
    texts = {"README.md": "[x](bench/results/h200-2026-01-01-a.json)", "bench/README.md": "`h200-2026-01-01-b.json`"}
    problems = check_data(files, texts.get, files[2:], texts["bench/README.md"])
    assert any("h200-2026-01-01-b.json: committed but cited by no document" in p for p in problems), problems
    assert any("index lacks h200-2026-01-01-a.json" in p for p in problems), problems
    files = ["docs/a.md", "src/plan/planner.cpp"]
    texts = {"docs/a.md": "`src/plan/planner.cpp`, `src/plan/`, `src/plan/gone.h`"}
    assert check_paths(files, texts.get) == ["docs/a.md: names src/plan/gone.h, which is not in the tree"]
    print("check_docs self-test: ok")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return 0
    try:
        files = tracked_files()
    except (OSError, subprocess.CalledProcessError):
        print("check_docs: skipped, not a git work tree (the rules read the tracked files)")
        return 77
    data_files = [f for f in files if f.startswith(DATA_DIRS)]
    problems = check_links(files, read_file)
    problems += check_paths(files, read_file)
    history = HISTORY_COMMIT.search(read_file("docs/notes/README.md"))
    problems += check_data(files, read_file, data_files, read_file(INDEX),
                           history.group(1) if history else None)
    for p in problems:
        print(p)
    print(f"check_docs: {len(problems)} problem(s) in {sum(f.endswith('.md') for f in files)} "
          f"documents and {len(data_files)} committed results")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
