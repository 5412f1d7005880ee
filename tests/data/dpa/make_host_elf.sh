#!/bin/sh
# Builds tests/data/dpa/host_apps.elf: a small x86-64 host program carrying two DPA
# applications the way DPACC packages them (docs/sources.md sections 5 and 7):
#
#   .dpa_bin_rpc_calc       fw-blobs/bin/rpc_calc.elf (the whole device ELF)
#   .dpa_bin_selftest       fw-blobs/bin/selftest.elf
#   .dpa_sig_name_rpc_calc  256 bytes: ".dpa_sig_rpc_calc", NUL-padded
#   .dpa_sig_rpc_calc       a FAKE crypto data section (sh_type 0x70000666): a 0x40-byte
#                           metadata header with metadata_version 1 (big-endian dword @0x0)
#                           and signature_type 2 = RSA_SHA_512 (big-endian dword @0x3c), then
#                           a "HASHLIST" stub and 0xff padding. Nothing in it is a real hash,
#                           signature or certificate.
#
# selftest has no .dpa_sig_name_ section (unsigned). objcopy cannot set a section type of
# 0x70000666, so the script adds the section as PROGBITS and patches sh_type in the section
# header table with a few lines of Python.
#
# Needs gcc, strip, objcopy, python3. Run from anywhere; the tests use the committed output
# and need none of these tools.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf 'int main(void) { return 0; }\n' > "$tmp/host.c"
gcc -Os -o "$tmp/host" "$tmp/host.c" -Wl,-z,noseparate-code -Wl,--build-id=none
strip "$tmp/host"

python3 - "$tmp" <<'PY'
import struct, sys
tmp = sys.argv[1]
name = b".dpa_sig_rpc_calc"
open(f"{tmp}/sig_name", "wb").write(name + b"\0" * (256 - len(name)))
meta = bytearray(0x40)
struct.pack_into(">I", meta, 0x0, 1)    # metadata_version
struct.pack_into(">I", meta, 0x3c, 2)   # signature_type: RSA_SHA_512
body = b"HASHLIST" + struct.pack(">II", 1, 2) + bytes(16)
sig = bytes(meta) + body
sig += b"\xff" * (-len(sig) % 4 + 8)
open(f"{tmp}/sig", "wb").write(sig)
PY

objcopy \
  --add-section .dpa_bin_rpc_calc="$root/fw-blobs/bin/rpc_calc.elf" \
  --add-section .dpa_bin_selftest="$root/fw-blobs/bin/selftest.elf" \
  --add-section .dpa_sig_name_rpc_calc="$tmp/sig_name" \
  --add-section .dpa_sig_rpc_calc="$tmp/sig" \
  "$tmp/host" "$here/host_apps.elf"

python3 - "$here/host_apps.elf" <<'PY'
import struct, sys
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
shoff, = struct.unpack_from("<Q", b, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3a)
str_off, = struct.unpack_from("<Q", b, shoff + shstrndx * shentsize + 0x18)
for i in range(shnum):
    h = shoff + i * shentsize
    n, = struct.unpack_from("<I", b, h)
    end = b.index(b"\0", str_off + n)
    if b[str_off + n:end] == b".dpa_sig_rpc_calc":
        struct.pack_into("<I", b, h + 4, 0x70000666)
        break
else:
    sys.exit("no .dpa_sig_rpc_calc section")
open(path, "wb").write(b)
PY
echo "wrote $here/host_apps.elf"
