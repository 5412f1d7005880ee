#!/usr/bin/env python3
"""Compares the names this project's FlexIO headers define with the names of NVIDIA's public
headers of the same files (issue 32: "our headers define the public names and nothing more").

    names.py PUBLIC_INCLUDE_DIR [--only HEADER ...]

PUBLIC_INCLUDE_DIR holds NVIDIA's `libflexio/`, `libflexio-dev/` and `libflexio-libc/` (FlexIO
24.01 is in `ssbandjl/doca`, fw-blobs/compat/README.md). Each of our headers in
`fw-blobs/include/libflexio-dev`, `fw-blobs/include/libflexio-libc` and
`flexio/include/libflexio` is compared with the public headers of its directory: macros,
functions, types (typedefs, struct / union / enum tags) and enumerators, as Universal Ctags
reads them. A name ours defines and no public header of the directory does is an *extra*,
unless it carries the project's prefix (`mlx5_dpa_`, `MLX5_DPA_`, `__mlx5_dpa`) or is a
header guard; a name the public header of the same name defines and none of ours does is a
*miss*; a name both define in different headers of the directory is listed as such only. Exit status 0 when there are neither, 1 otherwise, 2 for bad usage.
Nothing of NVIDIA's is copied: the public headers are only read.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OURS = {
    "libflexio-dev": os.path.join(ROOT, "fw-blobs/include/libflexio-dev"),
    "libflexio-libc": os.path.join(ROOT, "fw-blobs/include/libflexio-libc"),
    "libflexio": os.path.join(ROOT, "flexio/include/libflexio"),
}
KINDS = {"macro", "function", "prototype", "typedef", "struct", "union", "enum", "enumerator",
         "externvar"}
PREFIXES = ("mlx5_dpa_", "MLX5_DPA_", "__mlx5_dpa", "_mlx5_dpa")
# What ctags takes for a declaration and is not one (`_Static_assert(offsetof(...))`).
IGNORED = {"offsetof", "_Static_assert"}


def names(path):
    """The names `path` defines, by kind, as ctags reads them."""
    out = subprocess.run(
        ["ctags", "-x", "--c-kinds=+px-m", "--language-force=C", path],
        check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 2 or parts[1] not in KINDS:
            continue
        name, kind = parts[0], parts[1]
        if name.startswith("__anon"):
            continue
        found[name] = kind
    return found


def is_guard(name, kind):
    return kind == "macro" and name.endswith(("_H", "_H_", "_H__"))


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    public = argv[1]
    only = set(argv[argv.index("--only") + 1:]) if "--only" in argv else None
    extras = misses = 0
    for sub, ours_dir in OURS.items():
        headers = sorted(h for h in os.listdir(ours_dir) if h.endswith(".h"))
        theirs_dir = os.path.join(public, sub)
        public_headers = sorted(h for h in os.listdir(theirs_dir) if h.endswith(".h")) \
            if os.path.isdir(theirs_dir) else []
        # Every name of the family (a name may sit in another header of it than in ours).
        ours_all = {}
        for h in headers:
            ours_all.update(names(os.path.join(ours_dir, h)))
        theirs_all = {}
        for h in public_headers:
            theirs_all.update(names(os.path.join(theirs_dir, h)))
        for header in headers:
            if only and header not in only:
                continue
            ours = names(os.path.join(ours_dir, header))
            theirs_path = os.path.join(theirs_dir, header)
            theirs = names(theirs_path) if os.path.exists(theirs_path) else {}
            extra = sorted(n for n, k in ours.items()
                           if n not in theirs_all and not n.startswith(PREFIXES)
                           and not is_guard(n, k) and n not in IGNORED)
            miss = sorted(n for n, k in theirs.items()
                          if n not in ours_all and not is_guard(n, k) and n not in IGNORED)
            moved = sorted(n for n in ours if n in theirs_all and n not in theirs)
            extras += len(extra)
            misses += len(miss)
            what = f"{len(theirs)} public names" if theirs else "no public header of that name"
            print(f"{sub}/{header}: {what}, {len(extra)} extra, {len(miss)} missing"
                  + (f", {len(moved)} in another public header" if moved else ""))
            for n in extra:
                print(f"  extra   {ours[n]:<10} {n}")
            for n in miss:
                print(f"  missing {theirs[n]:<10} {n}")
    print(f"names.py: {extras} extra, {misses} missing")
    return 1 if extras or misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
