#!/usr/bin/env python3
"""chaincheck.py - check a cairn store's hash chain without cairn's code.

Written from format-spec/chain.md, manifest.md, segment.md, sealed.md,
record.md and compaction.md alone, with Python's standard library and the
system's libzstd (through ctypes) for sealed blocks. It recomputes the
chain from the first record, compares it with the value the MANIFEST keeps
for every sealed segment, and prints the head as `cairn head --format json`
does. With --head SEQ:HASH it proves (or not) that the store holds the
history that head names.

    python3 tools/chaincheck.py STORE [--head SEQ:HASH]

Exit status: 0 the chain holds (and the head, if given, is proven);
2 a difference was found (each on stderr); 1 the store could not be read.

It checks the chain, not every structure. A record of a log segment is
taken when its length, epoch, seq and XXH3 checksum (the system's
libxxhash) are right, so a torn tail ends the scan where cairn's ends.
"""
import ctypes
import ctypes.util
import hashlib
import json
import os
import struct
import sys

HOLE_TYPE = 12
# Store block sizes by MANIFEST version (manifest.md, "Store block").
STORE_BLOCK = {1: 0, 2: 32, 3: 40, 4: 80, 5: 88, 6: 104}


class Bad(Exception):
    pass


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


def load_xxhash():
    name = ctypes.util.find_library("xxhash") or "libxxhash.so.0"
    lib = ctypes.CDLL(name)
    lib.XXH3_64bits_withSeed.restype = ctypes.c_uint64
    lib.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return lib


def load_zstd():
    name = ctypes.util.find_library("zstd") or "libzstd.so.1"
    lib = ctypes.CDLL(name)
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.c_void_p, ctypes.c_size_t]
    lib.ZSTD_isError.restype = ctypes.c_uint
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    return lib


def read_manifest(store):
    with open(os.path.join(store, "MANIFEST"), "rb") as f:
        b = f.read()
    if b[:8] != b"CAIRNMAN":
        raise Bad("MANIFEST: not a MANIFEST")
    version = u16(b, 8)
    count, esize = u32(b, 48), u32(b, 52)
    block = STORE_BLOCK.get(version, 112)
    entries = []
    for i in range(count):
        p = 64 + block + i * esize
        e = {"id": u64(b, p), "kind": b[p + 8], "rev": u32(b, p + 12) if version >= 4 else 0,
             "base": u64(b, p + 16), "last": u64(b, p + 24), "chain": None}
        if version >= 8 and b[p + 9] & 1:
            e["chain"] = b[p + 56:p + 88]
        entries.append(e)
    return entries


def log_records(path, xxh):
    """Records of a log segment, from offset 64 while they are whole and valid."""
    with open(path, "rb") as f:
        b = f.read()
    salt, base = u64(b, 24), u64(b, 32)
    p, i = 64, 0
    while p + 40 <= len(b):
        n = u32(b, p)
        if n < 40 or p + n > len(b) or u32(b, p + 4) != salt & 0xffffffff \
                or u64(b, p + 8) != base + i \
                or xxh.XXH3_64bits_withSeed(b[p:p + n - 8], n - 8, salt) != u64(b, p + n - 8):
            break
        yield b[p:p + n], False
        p, i = p + n, i + 1


def sealed_records(path, zstd):
    with open(path, "rb") as f:
        b = f.read()
    version = u16(b, 8)
    foot = len(b) - 80
    if b[foot:foot + 8] != b"CAIRNEND":
        raise Bad("%s: no footer" % path)
    index, nblocks = u64(b, foot + 8), u32(b, foot + 16)
    for k in range(nblocks):
        q = index + 64 * k
        off, comp, raw = u64(b, q), u32(b, q + 8), u32(b, q + 12)
        src = b[off:off + comp]
        dst = ctypes.create_string_buffer(raw)
        got = zstd.ZSTD_decompress(dst, raw, src, comp)
        if zstd.ZSTD_isError(got) or got != raw:
            raise Bad("%s: block %d does not inflate" % (path, k))
        data = dst.raw
        p = 0
        while p < raw:
            n = u32(data, p)
            if n < 40 or p + n > raw:
                raise Bad("%s: block %d: a record runs past its end" % (path, k))
            yield data[p:p + n], version >= 2
            p += n


def hexval(v, seq):
    if not isinstance(v, str) or len(v) != 64 or any(c not in "0123456789abcdef" for c in v):
        raise Bad("seq %d: a hole with an invalid chain value" % seq)
    return bytes.fromhex(v)


def hole_chain(rec):
    """(upto, chain_in, chain, leaves) of a hole; chain_in None when it has none."""
    seq = u64(rec, 8)
    ns_len, json_len = u16(rec, 26), u32(rec, 28)
    payload = json.loads(rec[32 + ns_len:32 + ns_len + json_len])
    if "chain" not in payload and "chain_in" not in payload:
        return payload["upto"], None, None, None
    leaves = payload.get("leaves")
    if leaves is not None:
        if not isinstance(leaves, list) or len(leaves) != payload["records"]:
            raise Bad("seq %d: a hole whose leaves are not one per record" % seq)
        leaves = [hexval(x, seq) for x in leaves]
    return payload["upto"], hexval(payload.get("chain_in"), seq), \
        hexval(payload.get("chain"), seq), leaves


def fold(h, d):
    return hashlib.sha256(h + d).digest()


def leaf(rec):
    return hashlib.sha256(rec).digest()


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 64
    store, want = argv[1], None
    if len(argv) == 4 and argv[2] == "--head":
        s, _, h = argv[3].partition(":")
        want = (int(s), bytes.fromhex(h))
    elif len(argv) != 2:
        print("usage: chaincheck.py STORE [--head SEQ:HASH]", file=sys.stderr)
        return 64
    problems = []
    try:
        zstd, xxh = load_zstd(), load_xxhash()
        entries = read_manifest(store)
        h, seq, local, verified = bytes(32), 0, bytes(32), 0
        proven = None
        if want is not None and want[0] == 0:
            proven = want[1] == bytes(32)
            if not proven:
                problems.append("a head at seq 0 has the zero hash")
        for e in entries:
            if e["kind"] == 1:
                name = "%016x.seg" % e["id"] if e["rev"] == 0 else \
                    "%016x-%08x.seg" % (e["id"], e["rev"])
                recs = sealed_records(os.path.join(store, name), zstd)
            else:
                name = "%016x.log" % e["id"]
                recs = log_records(os.path.join(store, name), xxh)
            own = local  # this segment alone, from the MANIFEST's value before it
            for rec, compacted in recs:
                s = upto = u64(rec, 8)
                cin = None
                if compacted and u16(rec, 24) == HOLE_TYPE:
                    upto, cin, cout, leaves = hole_chain(rec)
                if cin is not None:
                    ok = h == cin
                    if ok and leaves is not None:
                        x = h
                        for d in leaves:
                            x = fold(x, d)
                        ok = x == cout
                    if not ok:
                        problems.append("the hole at seq %d does not follow the chain before "
                                        "it: a record of seqs %d..%d changed" % (s, verified + 1,
                                                                                 s - 1))
                        if want is not None and s <= want[0]:
                            proven = False
                    verified = upto
                    h = own = cout
                else:
                    d = leaf(rec)
                    h, own = fold(h, d), fold(own, d)
                seq = upto
                if want is not None and proven is None and upto >= want[0]:
                    if upto != want[0]:
                        problems.append("the head's seq %d has no value (inside a hole, or a "
                                        "retired number)" % want[0])
                        proven = False
                    else:
                        proven = h == want[1]
                        if not proven:
                            problems.append("the chain at seq %d is %s, the head says %s"
                                            % (want[0], h.hex(), want[1].hex()))
            if e["chain"] is not None:
                if own != e["chain"]:
                    problems.append("%s: the chain after seq %d is %s, the MANIFEST kept %s "
                                    "(a record of seqs %d..%d differs)"
                                    % (name, e["last"], own.hex(), e["chain"].hex(),
                                       e["base"], e["last"]))
                else:
                    verified = e["last"]
                local = e["chain"]
            else:
                local = own
        if want is not None and proven is None:
            problems.append("the log ends at seq %d, the head is at seq %d: records %d..%d "
                            "are missing" % (seq, want[0], seq + 1, want[0]))
    except (OSError, Bad, ValueError, KeyError) as ex:
        print("chaincheck: %s" % ex, file=sys.stderr)
        return 1
    print(json.dumps({"seq": seq, "hash": h.hex()}, separators=(",", ":")))
    for p in problems:
        print("chaincheck: %s" % p, file=sys.stderr)
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
