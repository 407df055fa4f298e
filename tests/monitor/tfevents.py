"""An independent reader of TensorBoard event files for the tests: TFRecord framing with a bitwise CRC32C
written from its definition, and a protobuf decoder written from the wire-format spec (no TensorFlow, no
protobuf library). Used by test_monitor.py (DeepSpeed's monitors) and test_tb_megatron.py (Megatron's tags)."""
import math
import struct


# ---- independent CRC32C ------------------------------------------------------------------------
def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ CRC_TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283, "the test's own CRC32C is wrong"


# ---- independent TFRecord + protobuf reader ------------------------------------------------------
def read_records(path):
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError("truncated record header at offset %d" % pos)
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if hcrc != masked(header):
            raise ValueError("length CRC mismatch at offset %d" % pos)
        body = data[pos + 12:pos + 12 + length]
        if len(body) != length or len(data) < pos + 16 + length:
            raise ValueError("truncated record at offset %d" % pos)
        (dcrc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if dcrc != masked(body):
            raise ValueError("data CRC mismatch at offset %d" % pos)
        out.append(body)
        pos += 16 + length
    return out


def varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def decode(buf):
    """protobuf message -> {field: [values]} (varint as int, fixed64/32 as bytes, len as bytes)."""
    fields, pos = {}, 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = varint(buf, pos)
        elif wire == 1:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            val, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            val, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("unexpected wire type %d" % wire)
        if pos > len(buf):
            raise ValueError("field %d runs past the message" % field)
        fields.setdefault(field, []).append(val)
    return fields


def to_float32(v):
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:  # beyond FLT_MAX: round-to-nearest float32 gives +-inf
        return math.copysign(math.inf, v)


def parse_event(body):
    f = decode(body)
    ev = {"wall_time": struct.unpack("<d", f[1][0])[0] if 1 in f else 0.0}
    step = f.get(2, [0])[0]
    ev["step"] = step - (1 << 64) if step >= 1 << 63 else step
    if 3 in f:
        ev["file_version"] = f[3][0].decode()
    if 5 in f:
        summary = decode(f[5][0])
        ev["values"] = []
        for v in summary.get(1, []):
            vf = decode(v)
            ev["values"].append((vf.get(1, [b""])[0].decode(), struct.unpack("<f", vf[2][0])[0] if 2 in vf else None))
    return ev


def scalars(path):
    """[(tag, step, value)] of every scalar event of the file, in order."""
    out = []
    for body in read_records(path):
        ev = parse_event(body)
        for tag, value in ev.get("values", []):
            out.append((tag, ev["step"], value))
    return out
