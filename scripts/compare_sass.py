#!/usr/bin/env python3
"""Compares the machine code of two builds of the same object file, kernel by kernel.

    python3 scripts/compare_sass.py OLD.o NEW.o [OLD2.o NEW2.o ...]

Each kernel's SASS (cuobjdump -sass, instruction encodings and control bits included) is
compared with its code addresses removed. Kernels are matched by their code, not their
names: a template argument added with a default value changes every mangled name without
changing a single instruction. Prints, per pair, how many kernels of the old object have
an identical twin in the new one, and the names of those that do not; exits 1 if any.
cuobjdump comes from the CUDA toolkit or the nvidia-cuda-cuobjdump wheel (on PATH).
"""
import collections
import re
import subprocess
import sys


def kernels(path):
    """{mangled name: tuple of SASS lines without addresses}."""
    text = subprocess.run(["cuobjdump", "-sass", path], capture_output=True, text=True, check=True).stdout
    found, name, body = {}, None, []
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name:
                found[name] = tuple(body)
            name, body = m.group(1), []
            continue
        if name is None:
            continue
        line = re.sub(r"/\*[0-9a-f]{4,}\*/", "", line).strip()
        if line:
            body.append(line)
    if name:
        found[name] = tuple(body)
    return found


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__)
        return 2
    differ = 0
    for old_path, new_path in zip(argv[0::2], argv[1::2]):
        old, new = kernels(old_path), kernels(new_path)
        available = collections.Counter(new.values())
        missing = []
        for name, body in old.items():
            if available[body] > 0:
                available[body] -= 1
            else:
                missing.append(name)
        print(f"{new_path}: {len(old) - len(missing)} of {len(old)} kernels identical ({len(new)} in the new object)")
        for name in missing:
            print(f"  changed or gone: {name[:160]}")
        differ += len(missing)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
