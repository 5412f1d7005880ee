"""The extended device attributes (ibv_query_device_ex), for tools/tests/real_clients.rs.

libibverbs asks for them with IB_USER_VERBS_EX_CMD_QUERY_DEVICE through the ioctl interface
(UVERBS_METHOD_INVOKE_WRITE) and copies each extension only when the response_length the
kernel writes covers it. Checks what mlx5_ib states for an Ethernet port: RSS on raw-packet
QPs with indirection tables of 2^log_max_rqt_size entries, receive WQs, the completion
timestamp mask and the core clock. DPDK's mlx5 driver sizes its RSS tables by the table size.
Prints "device_attr_ex: ok" when all hold; exits non-zero on the first that fails.
"""

import sys

from pyverbs.device import Context

IBV_QPT_RAW_PACKET = 8


def main():
    ctx = Context(name="mlx5_0")
    a = ctx.query_device_ex()
    rss = a.rss_caps
    checks = [
        ("rss_caps.supported_qpts has raw packet",
         rss.supported_qpts & (1 << IBV_QPT_RAW_PACKET) != 0),
        ("rss_caps.max_rwq_indirection_table_size is a power of two >= 256",
         rss.max_rwq_indirection_table_size >= 256
         and rss.max_rwq_indirection_table_size & (rss.max_rwq_indirection_table_size - 1) == 0),
        ("rss_caps.max_rwq_indirection_tables > 0", rss.max_rwq_indirection_tables > 0),
        ("max_wq_type_rq > 0", a.max_wq_type_rq > 0),
        ("completion_timestamp_mask != 0", a.completion_timestamp_mask != 0),
        ("hca_core_clock != 0", a.hca_core_clock != 0),
    ]
    for what, ok in checks:
        if not ok:
            print(f"device_attr_ex: FAILED: {what}")
            return 1
        print(f"device_attr_ex: {what}")
    print("device_attr_ex: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
