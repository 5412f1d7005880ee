#!/usr/bin/env python3
"""Sends FlexIO's packet-processor sample its frame through a runner's UDP link and checks the
answer (fw-blobs/compat/check.sh).

    pp_frame.py RUNNER_PORT OUR_PORT

The runner (`mlx5-dpa run --link udp:127.0.0.1:RUNNER_PORT,127.0.0.1:OUR_PORT`) takes each
datagram as a frame on its port and sends the port's frames back as datagrams. The frame is
the sample's: 65 bytes of IPv4 / UDP from 02:42:7e:7f:eb:02 (the source MAC its steering
rule matches), payload "===============12345678". The answer must be the frame with the MACs
swapped and "1 Event demo***..." from byte 0x2a, as the sample's device code writes it.
Exit status 0 when it is, 1 otherwise (or when nothing comes back within 10 s).
"""
import socket
import struct
import sys

PEER_MAC = bytes([0x02, 0x42, 0x7E, 0x7F, 0xEB, 0x02])
DST_MAC = bytes([0x02, 0x00, 0x5E, 0x00, 0x00, 0x01])


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame():
    payload = b"===============12345678"
    src, dst = bytes([192, 168, 100, 2]), bytes([192, 168, 100, 1])
    udp_len = 8 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0x4000, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", 5000, 5001, udp_len, 0) + payload
    pseudo = src + dst + struct.pack("!BBH", 0, 17, udp_len)
    udp = udp[:6] + struct.pack("!H", checksum(pseudo + udp) or 0xFFFF) + udp[8:]
    return DST_MAC + PEER_MAC + b"\x08\x00" + ip + udp


def main():
    runner, ours = int(sys.argv[1]), int(sys.argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", ours))
    s.settimeout(10)
    sent = frame()
    s.sendto(sent, ("127.0.0.1", runner))
    try:
        got, _ = s.recvfrom(2048)
    except socket.timeout:
        print("pp_frame: no frame came back within 10 s")
        return 1
    want = bytearray(sent)
    want[0:6], want[6:12] = sent[6:12], sent[0:6]
    text = b"1 Event demo***************"
    want[0x2A:] = text[: 65 - 0x2A]
    print("sent:     " + sent.hex())
    print("received: " + got.hex())
    if got != bytes(want):
        print("pp_frame: the answer is not the sample's")
        return 1
    print('pp_frame: MACs swapped, payload "%s"' % got[0x2A:].decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
