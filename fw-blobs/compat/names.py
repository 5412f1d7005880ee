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
unless it carries the project's prefix (`mlx5_dpa_`, `MLX5_DPA_`, `__mlx5_dpa`), is a
header guard, or is public in a later version or elsewhere (LATER below, each with its source); a name the public header of the same name defines and none of ours does is a
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
PREFIXES = ("mlx5_dpa_", "MLX5_DPA_", "__mlx5_dpa", "_mlx5_dpa", "__MLX5_DPA")
# What ctags takes for a declaration and is not one (`_Static_assert(offsetof(...))`).
IGNORED = {"offsetof", "_Static_assert"}

# Public names that a FlexIO 24.01 checkout does not define, with where they are public: the
# later versions' API (FlexIO 25.01's flexio_dev.h and flexio_dev_queue_access.h, of which a
# copy is public on GitHub but not in the checkout this script reads; the seed
# dpa-development-flexio-sdk.txt for the version API), DPACC's keywords, and names public
# headers use without defining. Not extras; listed as "later" in the counts.
LATER = {
    # The version API (seed, "Version API and Backward Compatibility"; 25.01 flexio_dev.h).
    "FLEXIO_DEV_VER": "seed", "FLEXIO_DEV_VER_LATEST": "seed",
    "FLEXIO_DEV_VER_USED": "seed", "FLEXIO_DEV_CURRENT_VERSION": "seed",
    "FLEXIO_DEV_LAST_SUPPORTED_VERSION": "seed",
    "FLEXIO_VER": "seed", "FLEXIO_VER_LATEST": "seed", "FLEXIO_VER_USED": "seed",
    "FLEXIO_CURRENT_VERSION": "seed", "FLEXIO_LAST_SUPPORTED_VERSION": "seed",
    "flexio_version_set": "seed",
    # 24.10's windows (25.01 flexio_dev.h).
    "flexio_window_entity": "25.01", "FLEXIO_DEV_WINDOW_ENTITY_0": "25.01",
    "FLEXIO_DEV_WINDOW_ENTITY_1": "25.01", "FLEXIO_DEV_WINDOW_ENTITY_NUM": "25.01",
    "flexio_dev_multi_window_config": "25.01", "flexio_dev_multi_window_mkey_config": "25.01",
    "flexio_dev_multi_window_ptr_acquire": "25.01",
    "flexio_dev_multi_window_copy_from_host": "25.01",
    "flexio_dev_multi_window_copy_to_host": "25.01",
    # 24.10's doorbells (25.01 flexio_dev_queue_access.h).
    "flexio_dev_zcqe_gen": "25.01", "flexio_dev_cc_db_next_act": "25.01",
    # DPACC's keywords (the seed's DPACC chapter): the compiler defines them, these headers
    # stand in for it under gcc.
    "__dpa_global__": "DPACC", "__dpa_rpc__": "DPACC",
    # Defined in no public header but named by them: the thread context public flexio_dev.h
    # declares opaque, and a register of the public dpa_outbox_v9_reg_*_rbits family that the
    # public OUTBOX_V_* pattern names.
    "flexio_dev_thread_ctx": "opaque", "dpa_outbox_v9_reg_EQ_DB_REARM_rbits": "family",
}


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
    extras = misses = laters = 0
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
            later = sorted(n for n in ours if n not in theirs_all and n in LATER)
            extra = sorted(n for n, k in ours.items()
                           if n not in theirs_all and not n.startswith(PREFIXES)
                           and not is_guard(n, k) and n not in IGNORED and n not in LATER)
            miss = sorted(n for n, k in theirs.items()
                          if n not in ours_all and not is_guard(n, k) and n not in IGNORED)
            moved = sorted(n for n in ours if n in theirs_all and n not in theirs)
            extras += len(extra)
            misses += len(miss)
            what = f"{len(theirs)} public names" if theirs else "no public header of that name"
            laters += len(later)
            print(f"{sub}/{header}: {what}, {len(extra)} extra, {len(miss)} missing"
                  + (f", {len(moved)} in another public header" if moved else "")
                  + (f", {len(later)} later public" if later else ""))
            for n in extra:
                print(f"  extra   {ours[n]:<10} {n}")
            for n in miss:
                print(f"  missing {theirs[n]:<10} {n}")
    print(f"names.py: {extras} extra, {misses} missing ({laters} names public after 24.01)")
    return 1 if extras or misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
