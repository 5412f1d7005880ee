"""UD datagrams on the served device, for tools/tests/real_clients.rs: what a UD receiver is
told and what it is not given.

Two UD QPs on one port (the datagrams loop back through the port to its own address). Checks,
each printed on success:
  - a datagram whose Q_Key is not the receiver's is dropped (no completion within 300 ms);
  - one with the right Q_Key arrives: byte_len is the 40-byte GRH area plus the payload, the
    completion names the source QP and has the GRH flag, the GRH area's last 20 bytes are the
    IPv4 header (version 4, protocol UDP, the port's own address), the payload is intact;
  - a datagram above the QP's MTU (4096) completes in error (IBV_WC_LOC_LEN_ERR) at the sender.
Exits non-zero on the first check that fails. Runs under `mlx5-dpa run --ip 10.7.0.1`.
"""

import os
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

PORT = 1
GID_INDEX = 1
QKEY = 0x1234
GRH = 40
BUF = 8192


def fail(what):
    print(f"FAILED: {what}", flush=True)
    os._exit(1)


def poll(cq, limit):
    """One completion within `limit` seconds, or None."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
    return None


def ud_qp(pd, cq):
    cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap))
    attr = QPAttr(port_num=PORT)
    attr.qkey = QKEY
    attr.sq_psn = 0
    qp.to_rts(attr)
    return qp


def main():
    ctx = Context(name="mlx5_0")
    pd = PD(ctx)
    scq, rcq = CQ(ctx, 16), CQ(ctx, 16)
    sender, receiver = ud_qp(pd, scq), ud_qp(pd, rcq)
    smr = MR(pd, BUF, e.IBV_ACCESS_LOCAL_WRITE)
    rmr = MR(pd, BUF, e.IBV_ACCESS_LOCAL_WRITE)
    gid = ctx.query_gid(PORT, GID_INDEX)
    ah = AH(pd, attr=AHAttr(port_num=PORT, is_global=1,
                            gr=GlobalRoute(dgid=gid, sgid_index=GID_INDEX)))

    def post_recv():
        receiver.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(rmr.buf, BUF, rmr.lkey)]))

    def send(size, qkey, wr_id):
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1,
                    sg=[SGE(smr.buf, size, smr.lkey)])
        wr.set_wr_ud(ah, receiver.qp_num, qkey)
        sender.post_send(wr)
        return poll(scq, 5)

    payload = bytes(range(256)) * 2
    smr.write(payload, len(payload))
    post_recv()

    wc = send(len(payload), QKEY + 1, 1)
    if wc is None or wc.status != e.IBV_WC_SUCCESS:
        fail(f"the wrong-Q_Key send did not complete: {wc}")
    if poll(rcq, 0.3) is not None:
        fail("a datagram with the wrong Q_Key was received")
    print("wrong Q_Key: dropped", flush=True)

    wc = send(len(payload), QKEY, 2)
    if wc is None or wc.status != e.IBV_WC_SUCCESS:
        fail(f"the send did not complete: {wc}")
    rwc = poll(rcq, 5)
    if rwc is None or rwc.status != e.IBV_WC_SUCCESS:
        fail(f"no receive completion: {rwc}")
    if rwc.byte_len != GRH + len(payload):
        fail(f"byte_len {rwc.byte_len}, not {GRH + len(payload)}")
    if rwc.src_qp != sender.qp_num:
        fail(f"src_qp {rwc.src_qp:#x}, not {sender.qp_num:#x}")
    if not rwc.wc_flags & e.IBV_WC_GRH:
        fail("no GRH flag")
    got = rmr.read(GRH + len(payload), 0)
    ip = got[20:40]
    if ip[0] >> 4 != 4 or ip[9] != 17 or bytes(ip[12:16]) != own_ipv4(gid):
        fail(f"the GRH area's IPv4 header: {bytes(ip).hex()}")
    if bytes(got[GRH:]) != payload:
        fail("the payload arrived changed")
    print(f"right Q_Key: {rwc.byte_len} bytes, src_qp {rwc.src_qp:#x}, GRH with the IPv4 header",
          flush=True)

    post_recv()
    wc = send(4096 + 64, QKEY, 3)
    if wc is None or wc.status != e.IBV_WC_LOC_LEN_ERR:
        fail(f"a datagram above the MTU completed with {wc and wc.status}")
    print("above the MTU: IBV_WC_LOC_LEN_ERR", flush=True)
    print("ud: ok", flush=True)
    os._exit(0)


def own_ipv4(gid):
    """The IPv4 address of an IPv4-mapped GID (its last four bytes)."""
    return bytes.fromhex("".join(str(gid).split(":"))[-8:])


if __name__ == "__main__":
    main()
