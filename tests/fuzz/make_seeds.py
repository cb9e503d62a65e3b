#!/usr/bin/env python3
"""Writes the small seed inputs of tests/fuzz/corpus/<target>/seed-*.

Run once by hand when the formats change (python3 tests/fuzz/make_seeds.py); the outputs are
checked in. Inputs libFuzzer found that crashed are added as corpus/<target>/crash-* by hand
and are never regenerated here. Formats: docs/protocol.md (wire, channel), docs/workloads.md
(traces, catalog), docs/operating.md (arbiter config), docs/preload.md (environment).
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def header(msg_type, length):
    return struct.pack("<IHHII", 0x52485347, 1, msg_type, length, 0)


def text_field(s, size):
    b = s.encode()
    return b + b"\0" * (size - len(b))


# --- wire: RegisterRequest / RegisterReply / Goodbye
def request(quota, slo, flags=0, prev=0, gpu=0xFFFFFFFF, resident=0, name="resnet50"):
    body = struct.pack("<QIIIIQ", quota, slo, flags, prev, gpu, resident) + text_field(name, 128)
    return header(1, 16 + len(body)) + body


def reply(accepted, gpu, cid, chan, quota, epoch, reason):
    body = struct.pack("<IIIIQQ", accepted, gpu, cid, chan, quota, epoch) + text_field(reason, 192)
    return header(2, 16 + len(body)) + body


put("wire", "request", request(1536 << 20, 100))
put("wire", "request-reregister", request(1 << 30, 50, 3, 9, 1, 1 << 20, "bert"))
put("wire", "request-bad-version", request(1 << 30, 50)[:4] + struct.pack("<H", 2) + request(1 << 30, 50)[6:])
put("wire", "reply-accept", reply(1, 0, 42, 4096, 1 << 30, 7, ""))
put("wire", "reply-refuse", reply(0, 0xFFFFFFFF, 0, 0, 0, 7, "quota 64 GiB exceeds every GPU"))
put("wire", "goodbye", header(3, 208) + text_field("arbiter stopping", 192))
put("wire", "short", header(1, 16))
# Version 4 (issue 20): the share query and its answer.
def share_query(quota, slo, compute, bandwidth, name):
    body = struct.pack("<QIBBH", quota, slo, compute, bandwidth, 0) + text_field(name, 128)
    return struct.pack("<IHHII", 0x52485347, 4, 4, 16 + len(body), 0) + body


def share_answer(gpu, corun, share, limit, epoch, reason):
    body = struct.pack("<IIIIQQ", gpu, corun, share, 0, limit, epoch) + text_field(reason, 192)
    return struct.pack("<IHHII", 0x52485347, 4, 5, 16 + len(body), 0) + body


put("wire", "share-query", share_query(0, 50, 20, 10, "small"))
put("wire", "share-answer", share_answer(0, 1, 25, 0, 7, ""))
put("wire", "share-answer-bad-share", share_answer(0, 1, 250, 0, 7, ""))

# --- channel: prefix (client_id, gpu, quota, now: 8 bytes each; orders, grants: 8 bytes each;
# placement: 1 byte), then the client's bytes from offset 256 (or 0).
def chan_prefix(quota, now, orders, grants, whole=0):
    return struct.pack("<QQQQQQB", 0, 0, quota - 1, now, orders, grants, whole)


def client_lines(state=0, released=0, burst=(0, 0, 0, 0, 0, 0), ack=(0, 0, 0, 0, 0, 0, 0, 0), hb=0):
    token = struct.pack("<IIIIQ", state, released, 0, 0, 0).ljust(64, b"\0")
    ver, in_burst, started, start, end, gpu_ns = burst
    b = struct.pack("<IIIIQQQ", ver, in_burst, started, 0, start, end, gpu_ns).ljust(64, b"\0")
    ack_seq, status, residency, rgpu, moved, dur, rbytes, swapin = ack
    a = struct.pack("<IIIIQQQII", ack_seq, status, residency, rgpu, moved, dur, rbytes, swapin, 0).ljust(64, b"\0")
    h = struct.pack("<QII", hb, 1, 0).ljust(64, b"\0")
    return token + b + a + h


NOW = 10 ** 12
put("channel", "idle", chan_prefix(1 << 30, NOW, 0, 0) + client_lines())
put("channel", "holding-burst", chan_prefix(1 << 30, NOW, 1, 1) +
    client_lines(2, 0, (2, 1, 3, NOW - 5000, 0, 0), (1, 0, 0, 0, 1 << 20, 1000, 1 << 29, 0), NOW))
put("channel", "released", chan_prefix(1 << 30, NOW, 2, 1) +
    client_lines(3, 1, (4, 0, 2, NOW - 9000, NOW - 100, 800), (2, 0, 2, 0xFFFFFFFF, 1 << 29, 10 ** 6, 0, 1), NOW))
put("channel", "odd-seqlock", chan_prefix(1 << 20, NOW, 0, 0) + client_lines(1, 0, (5, 1, 1, 0, 0, 0)))
put("channel", "whole-page", chan_prefix(1 << 30, NOW, 1, 2, 1) + b"\xff" * 600)

# --- arbiter config: byte 0 even = TOML, odd = command line (one argument per line)
put("arbiter_config", "toml", b"\0" + b"""socket = "/run/gshare/arbiter.sock"
socket_mode = "0660"
gpus = [0, 1]
gpu_memory = "80GiB"
slice = "20ms"
preempt_grace = "200ms"
policy = "aggressive"
fail_mode = "closed"
event_ring_capacity = 1024
max_clients = 64
log_level = "warn"
""")
put("arbiter_config", "toml-table", b"\0[arbiter]\nmetrics = \"127.0.0.1:9400\"\ndeep_evict_after = \"5min\"\n")
put("arbiter_config", "cmdline", b"\1--socket\n/tmp/a.sock\n--gpus\n0,1,2\n--slice=10ms\n--memory-reserve\n1GiB\n--fail-mode\nopen")
put("arbiter_config", "doorbell", b"\0doorbell_rate = 500\ndoorbell_flood_disconnect = \"3s\"\nallowed_gids = \"4242\"\n")
put("arbiter_config", "cmdline-bad", b"\1--gpu-count\n0\n--idle-release\n20")

# --- traces: byte 0 = options (skip_malformed, compression, max_requests), then the text
put("csv_trace", "basic", b"\0timestamp_ms,function\n0,a\n1.5,b\n# c\n\n2,a\n")
put("csv_trace", "exec", b"\x09timestamp_ms,function,exec_ms\r\n10,f,2.5\r\n5,g,\r\nx,f,1\n")
put("azure_functions", "basic", b"\0\0HashOwner,HashApp,HashFunction,Trigger,1,2,3,4\n"
    b"o1,a1,f-http,http,2,0,1,0\no1,a1,f-timer,timer,1,1,1,1\no2,a2,f-idle,http,0,0,0,0\n")
put("azure_functions", "dup", b"\x01\x15HashOwner,HashApp,HashFunction,Trigger,1\no,a,f,http,1\no,b,f,http,7\n")
put("azure_llm", "basic", b"\0\0TIMESTAMP,ContextTokens,GeneratedTokens\n"
    b"2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"
    b"2023-11-16 18:15:51.2224670,879,55\n")
put("azure_llm", "skip", b"\x01\x13TIMESTAMP,ContextTokens,GeneratedTokens\n"
    b"2023-11-16 18:15:51.2224670,879,55\n2023-11-16 18:15:50.9951690,396,109\nbad,1,2\n")

# --- synthetic: functions, duration, seed, max_requests (8 bytes each), mask, fields
put("synthetic", "default", struct.pack("<QQQQI", 10, 5_000_000, 1, 999, 0))
put("synthetic", "popular", struct.pack("<QQQQI", 16, 10_000_000, 7, 4999, 1 << 12))
put("synthetic", "fields", struct.pack("<QQQQI", 4, 1_000_000, 3, 100, 0x3FF) +
    struct.pack("<dddddddd", -1.0, 2.0, 1.0, 600.0, 0.2, 0.5, 1.5, 3.0) + struct.pack("<q", 1000) +
    struct.pack("<d", 0.5))

# --- catalog
put("catalog", "default", open(os.path.join(os.path.dirname(__file__), "..", "..", "tools", "workload",
                                            "data", "default-catalog.toml"), "rb").read())
put("catalog", "small", 'context = "400MiB"\n[[model]]\nname = "m"\nweights = "7MiB"\n'
    'activation = "32MiB"\nexec = "1ms"\nexec_cv = 0.1\nshare = 1\n')

# --- preload environment: pid (4 bytes), then one value per line in ParseConfig's order
put("preload_env", "full", struct.pack("<I", 1234) + b"1536MiB\nresnet\n100\n/tmp/ctl-%p.sock\n"
    b"/usr/lib/libcuda.so.1\ndebug\n/tmp/log\n/run/gshare/arbiter.sock\n300\nclosed\n")
put("preload_env", "bad", struct.pack("<I", 1) + b"12 parsecs\n\n0\n%p%p\n\n\n\n\n-1\nmaybe\n")
# GSHARE_FUNCTION with a tab / an escape byte / 128 bytes (the limit is 127 printable bytes).
put("preload_env", "function-tab", struct.pack("<I", 1) + b"1GiB\nres\tnet\n")
put("preload_env", "function-escape", struct.pack("<I", 1) + b"1GiB\n\x1b[31mred\x7f\n")
put("preload_env", "function-long", struct.pack("<I", 1) + b"1GiB\n" + b"f" * 128 + b"\n")

# --- units: text (the first 8 bytes double as the value to format)
for i, s in enumerate(["1536MiB", "2GiB", "4096", "1.5 KB", "20ms", "500us", "1.5s", "2min",
                       "18446744073709551615", "99999999999TiB"]):
    put("units", str(i), s)
