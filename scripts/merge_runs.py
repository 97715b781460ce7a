#!/usr/bin/env python3
"""Gathers several anvil-bench JSON files into one: {"note", "gpu", "date", "runs": {name: run}}.

The device returns at most 8 files a call, so a sweep run as one process per setting
(anvil-bench --decode-splits S, say) comes back as one file.

    scripts/merge_runs.py OUT.json [--note "..."] [--text NAME=FILE ...] NAME=FILE [NAME=FILE ...]

--text keeps a text file's lines under "texts" (a trace the runs printed, say).
"""
import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--note", default="")
    parser.add_argument("--text", action="append", default=[], metavar="NAME=FILE")
    parser.add_argument("runs", nargs="+", metavar="NAME=FILE")
    args = parser.parse_args()

    def named(item):
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            parser.error(f"expected NAME=FILE, got {item!r}")
        return name, path

    runs = {}
    for name, path in map(named, args.runs):
        with open(path) as f:
            runs[name] = json.load(f)
    first = next(iter(runs.values()))
    merged = {"note": args.note, "gpu": first.get("gpu"), "date": first.get("date"), "runs": runs}
    texts = {}
    for name, path in map(named, args.text):
        with open(path) as f:
            texts[name] = f.read().splitlines()
    if texts:
        merged["texts"] = texts
    with open(args.out, "w") as f:
        json.dump(merged, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
