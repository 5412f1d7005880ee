"""A verbs client that forks and that exits without cleaning up, for tools/tests/real_clients.rs.

  fork_and_exit.py fork     parent: two RC QPs on one port, a message between them; fork();
                            the child finds its inherited context answering EIO, opens the
                            device afresh and moves a message on its own; the parent, after
                            the child, moves another message (the model was not disturbed).
  fork_and_exit.py exit N   makes a PD, MR, CQ and a connected QP pair, then leaves with
                            os._exit(N): no destroy, no close.
  fork_and_exit.py kill     the same, then SIGKILL to itself.

Prints one line per step; exits non-zero on the first that goes wrong. Runs under
`mlx5-dpa run` with Debian's python3-pyverbs.
"""

import errno
import os
import signal
import sys

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

PORT = 1
GID_INDEX = 1
SIZE = 1024


class Pair:
    """Two RC QPs on one context, connected to each other, one CQ, one MR each."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.pd = PD(ctx)
        self.cq = CQ(ctx, 16)
        access = e.IBV_ACCESS_LOCAL_WRITE
        self.mrs = [MR(self.pd, SIZE, access) for _ in range(2)]
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
        init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap)
        self.qps = [QP(self.pd, init) for _ in range(2)]
        gid = ctx.query_gid(PORT, GID_INDEX)
        for me, peer in ((0, 1), (1, 0)):
            attr = QPAttr(port_num=PORT)
            attr.path_mtu = e.IBV_MTU_1024
            attr.max_dest_rd_atomic = 1
            attr.max_rd_atomic = 1
            attr.min_rnr_timer = 12
            attr.timeout = 14
            attr.retry_cnt = 7
            attr.rnr_retry = 7
            gr = GlobalRoute(dgid=gid, sgid_index=GID_INDEX)
            attr.ah_attr = AHAttr(port_num=PORT, is_global=1, gr=gr)
            attr.dest_qp_num = self.qps[peer].qp_num
            attr.rq_psn = 0
            attr.sq_psn = 0
            self.qps[me].to_rts(attr)

    def message(self, text):
        """Sends `text` from QP 0 to QP 1 and checks it arrived whole."""
        data = text.encode().ljust(SIZE, b".")
        self.mrs[0].write(data, SIZE)
        self.mrs[1].write(b"\0" * SIZE, SIZE)
        recv = RecvWR(wr_id=2, num_sge=1, sg=[SGE(self.mrs[1].buf, SIZE, self.mrs[1].lkey)])
        self.qps[1].post_recv(recv)
        send = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1,
                      sg=[SGE(self.mrs[0].buf, SIZE, self.mrs[0].lkey)])
        self.qps[0].post_send(send)
        seen = {}
        for _ in range(2_000_000):
            n, wcs = self.cq.poll(2)
            for wc in wcs:
                if wc.status != e.IBV_WC_SUCCESS:
                    fail(f"completion {wc.wr_id}: status {wc.status}")
                seen[wc.wr_id] = wc
            if len(seen) == 2:
                break
        if len(seen) != 2:
            fail(f"only completions {sorted(seen)} arrived")
        if self.mrs[1].read(SIZE, 0) != data:
            fail("the message arrived changed")


def fail(what):
    print(f"FAILED: {what}", flush=True)
    os._exit(1)


def say(what):
    print(what, flush=True)


def fork_case():
    ctx = Context(name="mlx5_0")
    pair = Pair(ctx)
    pair.message("before fork")
    say("parent: message before fork")
    pid = os.fork()
    if pid == 0:
        try:
            PD(ctx)
            fail("child: a PD from the inherited context")
        except PyverbsRDMAError as ex:
            if ex.error_code != errno.EIO:
                fail(f"child: inherited context answered {ex.error_code}, not EIO")
        say("child: inherited context answers EIO")
        own = Context(name="mlx5_0")
        Pair(own).message("in the child")
        say("child: message on its own device")
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        fail(f"child ended with status {status:#x}")
    pair.message("after fork")
    PD(ctx).close()
    say("parent: message after fork")
    say("fork: ok")


def leave(how):
    ctx = Context(name="mlx5_0")
    pair = Pair(ctx)
    pair.message("before leaving")
    say(f"made PD, MR, CQ and two connected QPs; leaving by {how}")
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(int(how))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "fork":
        fork_case()
    elif len(sys.argv) == 3 and sys.argv[1] == "exit":
        leave(sys.argv[2])
    elif len(sys.argv) == 2 and sys.argv[1] == "kill":
        leave("kill")
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
