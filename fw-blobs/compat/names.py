#!/usr/bin/env python3
"""Compares the names this project's FlexIO headers define with the names of NVIDIA's public
headers of the same files (issue 32: "our headers define the public names and nothing more").

    names.py PUBLIC_INCLUDE_DIR [--doca DOCA_INCLUDE_DIR] [--only HEADER ...]

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


# DOCA DPA's device headers (flat in the include directory), compared with DOCA 2.6's.
DOCA_HEADERS = ["doca_dpa_common.h", "doca_dpa_dev.h", "doca_dpa_dev_buf.h",
                "doca_dpa_dev_rdma.h", "doca_dpa_dev_sync_event.h", "doca_version.h"]

# DOCA names public after 2.6: DOCA 2.7's doca_dpa_dev_rdma.h / doca_dpa_dev_buf.h (public
# copies on GitHub) and DOCA 2.9's device API (the seed doca-dpa.txt), not in a 2.6 checkout.
DOCA_LATER = set("""
DOCA_DPA_DEV_COMP_RECV_ERR DOCA_DPA_DEV_COMP_RECV_RDMA_WRITE_IMM DOCA_DPA_DEV_COMP_RECV_SEND
DOCA_DPA_DEV_COMP_RECV_SEND_IMM DOCA_DPA_DEV_COMP_SEND DOCA_DPA_DEV_COMP_SEND_ERR
DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH DOCA_DPA_DEV_SUBMIT_FLAG_NONE
DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS doca_dpa_dev_async_ops_t doca_dpa_dev_completion_ack
doca_dpa_dev_completion_element_t doca_dpa_dev_completion_request_notification
doca_dpa_dev_completion_t doca_dpa_dev_completion_type_t doca_dpa_dev_device_set
doca_dpa_dev_get_completion doca_dpa_dev_get_completion_immediate
doca_dpa_dev_get_completion_type doca_dpa_dev_get_completion_user_data
doca_dpa_dev_hash_table_add doca_dpa_dev_hash_table_find doca_dpa_dev_hash_table_remove
doca_dpa_dev_hash_table_t doca_dpa_dev_mmap_get_external_ptr doca_dpa_dev_mmap_t
doca_dpa_dev_notification_completion_t doca_dpa_dev_post_memcpy doca_dpa_dev_printf
doca_dpa_dev_submit_flag doca_dpa_dev_t doca_dpa_dev_thread_finish
doca_dpa_dev_thread_get_local_storage doca_dpa_dev_thread_notify doca_dpa_dev_thread_reschedule
doca_dpa_dev_buf_get_mmap doca_dpa_dev_buf_set_addr doca_dpa_dev_buf_set_len
doca_dpa_dev_buf_set_mmap doca_dpa_dev_post_buf_memcpy
doca_dpa_dev_rdma_completion_get_wr_index doca_dpa_dev_rdma_post_atomic_fetch_add
doca_dpa_dev_rdma_post_buf_atomic_fetch_add doca_dpa_dev_rdma_post_buf_read
doca_dpa_dev_rdma_post_buf_receive doca_dpa_dev_rdma_post_buf_send
doca_dpa_dev_rdma_post_buf_send_imm doca_dpa_dev_rdma_post_buf_write
doca_dpa_dev_rdma_post_buf_write_imm doca_dpa_dev_rdma_post_read doca_dpa_dev_rdma_post_send_imm
doca_dpa_dev_rdma_post_write doca_dpa_dev_rdma_post_write_imm doca_dpa_dev_rdma_receive_ack
doca_dpa_dev_rdma_srq_receive_ack doca_dpa_dev_sync_event_post_wait_gt
doca_dpa_dev_sync_event_post_wait_ne __dpa_global__ __dpa_rpc__
""".split())


def compare(label, pairs, later, public_only=()):
    """Compares each (our header, public header) of `pairs`, the public names of the family
    being those of every public header of it (`public_only`: those we have no file for);
    prints the findings, returns (extras, misses, later)."""
    ours_all, theirs_all = {}, {}
    for path in public_only:
        theirs_all.update(names(path))
    for ours_path, theirs_path in pairs:
        ours_all.update(names(ours_path))
        if theirs_path and os.path.exists(theirs_path):
            theirs_all.update(names(theirs_path))
    extras = misses = laters = 0
    for ours_path, theirs_path in pairs:
        header = os.path.basename(ours_path)
        ours = names(ours_path)
        theirs = names(theirs_path) if theirs_path and os.path.exists(theirs_path) else {}
        late = sorted(n for n in ours if n not in theirs_all and n in later)
        extra = sorted(n for n, k in ours.items()
                       if n not in theirs_all and not n.startswith(PREFIXES)
                       and not is_guard(n, k) and n not in IGNORED and n not in later)
        miss = sorted(n for n, k in theirs.items()
                      if n not in ours_all and not is_guard(n, k) and n not in IGNORED)
        moved = sorted(n for n in ours if n in theirs_all and n not in theirs)
        extras += len(extra)
        misses += len(miss)
        laters += len(late)
        what = f"{len(theirs)} public names" if theirs else "no public header of that name"
        print(f"{label}{header}: {what}, {len(extra)} extra, {len(miss)} missing"
              + (f", {len(moved)} in another public header" if moved else "")
              + (f", {len(late)} later public" if late else ""))
        for n in extra:
            print(f"  extra   {ours[n]:<10} {n}")
        for n in miss:
            print(f"  missing {theirs[n]:<10} {n}")
    return extras, misses, laters


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    public = argv[1]
    doca = argv[argv.index("--doca") + 1] if "--doca" in argv else None
    only = set(argv[argv.index("--only") + 1:]) if "--only" in argv else None
    extras = misses = laters = 0
    for sub, ours_dir in OURS.items():
        headers = sorted(h for h in os.listdir(ours_dir) if h.endswith(".h")
                         and (not only or h in only))
        theirs_dir = os.path.join(public, sub)
        # Every public header of the directory counts for the family's names.
        public_only = [os.path.join(theirs_dir, h) for h in sorted(os.listdir(theirs_dir))
                       if h.endswith(".h") and h not in headers] \
            if os.path.isdir(theirs_dir) else []
        pairs = [(os.path.join(ours_dir, h), os.path.join(theirs_dir, h)) for h in headers]
        e, m, l = compare(f"{sub}/", pairs, LATER, public_only)
        extras, misses, laters = extras + e, misses + m, laters + l
    if doca:
        inc = os.path.join(ROOT, "fw-blobs/include")
        pairs = [(os.path.join(inc, h), os.path.join(doca, h)) for h in DOCA_HEADERS
                 if not only or h in only]
        # DOCA's annotations live in its doca_compat.h, which these headers fold in.
        e, m, l = compare("doca/", pairs, DOCA_LATER, [os.path.join(doca, "doca_compat.h")])
        extras, misses, laters = extras + e, misses + m, laters + l
    print(f"names.py: {extras} extra, {misses} missing ({laters} names public later)")
    return 1 if extras or misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
