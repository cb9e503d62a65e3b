#!/usr/bin/env python3
"""An unmodified PyTorch inference under libgshare.so on a real GPU (tests/gpu/smoke.sh, check 8).

Run with LD_PRELOAD=libgshare.so, GSHARE_VGPU_MEMORY=<quota> and GSHARE_CONTROL_SOCKET=<path>.
PyTorch reaches the driver through the CUDA runtime's cuGetProcAddress table, the path most real
inference servers take. The probe checks, printing one `key=value` line per check:
  - torch.cuda.mem_get_info() reports the quota as the device's total memory;
  - an allocation inside the quota succeeds and one beyond it raises torch's OutOfMemoryError
    (the process keeps running);
  - a model's output is bit-identical after the shim swapped the whole vGPU out to host memory
    and back (automatically on the next launch, then explicitly), and so is a large tensor;
  - the swap replies (bytes, times) for the report.
Exit status 0 when every check passed, 1 otherwise. Needs no gshare Python code.
"""
import os
import socket
import sys
import time

import torch


def ctl(command):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    s.connect(os.environ["GSHARE_CONTROL_SOCKET"])
    s.sendall((command + "\n").encode())
    reply = s.makefile().readline().strip()
    s.close()
    return reply


def main():
    ok = True

    def check(name, cond, detail=""):
        nonlocal ok
        ok = ok and cond
        print(f"{'PASS' if cond else 'FAIL'} {name} {detail}".rstrip(), flush=True)

    quota = int(os.environ.get("GSHARE_TORCH_QUOTA_BYTES", "0"))
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    check("mem_get_info", quota == 0 or total == quota, f"total={total} free={free} quota={quota}")

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 4096)
    ).to("cuda", torch.float16).eval()
    x = torch.randn(256, 4096, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        y0 = model(x).cpu()
    big_bytes = total // 2
    big = torch.full((big_bytes,), 7, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()

    try:
        extra = torch.empty(total, dtype=torch.uint8, device="cuda")
        check("over_quota_refused", False, f"allocated {extra.numel()} bytes beyond the quota")
    except torch.OutOfMemoryError as e:
        check("over_quota_refused", True, "torch.OutOfMemoryError: " + str(e).split("\n")[0][:80])

    t = time.perf_counter()
    out = ctl("swap-out")
    out_ms = (time.perf_counter() - t) * 1e3
    check("swap_out", out.startswith("ok"), f"reply='{out}' wall_ms={out_ms:.1f}")
    t = time.perf_counter()
    with torch.no_grad():
        y1 = model(x).cpu()  # the launch swaps the vGPU back in
    auto_ms = (time.perf_counter() - t) * 1e3
    check("output_after_automatic_swap_in", torch.equal(y0, y1), f"first_request_ms={auto_ms:.1f}")
    check("big_tensor_after_swap", int(big.min()) == 7 and int(big.max()) == 7,
          f"bytes={big.numel()}")

    out2 = ctl("swap-out")
    inn = ctl("swap-in 0")
    check("explicit_swap_in", out2.startswith("ok") and inn.startswith("ok"),
          f"swap_out='{out2}' swap_in='{inn}'")
    with torch.no_grad():
        y2 = model(x).cpu()
    check("output_after_explicit_swap_in", torch.equal(y0, y2))
    print("stats " + ctl("stats"), flush=True)
    print("RESULT " + ("PASS" if ok else "FAIL"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
