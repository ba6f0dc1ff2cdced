"""Several GPUs through one session, as a framework sees them (tests/gpu/run-multigpu.sh): PyTorch's device
count and names, a computation on every device, tensors moved between devices both ways, peer access, and
NVML's device count and UUIDs matching CUDA's. Prints only what must equal the native run on the same
machine (no timings, no addresses)."""
import os

import torch

n = torch.cuda.device_count()
print("torch devices:", n)
names = [torch.cuda.get_device_name(d) for d in range(n)]
print("names:", names)
xs = []
for d in range(n):
    with torch.cuda.device(d):
        a = torch.arange(1 << 20, dtype=torch.float64, device="cuda") * (d + 1)
        xs.append(a)
        print(f"cuda:{d} sum", float(a.sum().item()), "current", torch.cuda.current_device())
for d in range(n):
    e = (d + 1) % n
    moved = xs[d].to(f"cuda:{e}")
    back = moved.to(f"cuda:{d}")
    print(f"cuda:{d} -> cuda:{e}", moved.device, float(moved.sum().item()), bool(torch.equal(back, xs[d])))
print("peer access:", [[torch.cuda.can_device_access_peer(a, b) for b in range(n) if b != a] for a in range(n)])
m = torch.randn(512, 512, device="cuda:0", generator=torch.Generator(device="cuda:0").manual_seed(1))
r = [float((m.to(f"cuda:{d}") @ m.to(f"cuda:{d}")).sum().item()) for d in range(n)]
print("same matmul on every device:", all(abs(v - r[0]) < 1e-3 * max(1.0, abs(r[0])) for v in r))
try:
    if os.environ.get("MULTIGPU_NVML", "1") == "0":
        raise ImportError("skipped")  # NVML ignores CUDA_VISIBLE_DEVICES natively; vmcuda's does not (README)
    import pynvml
    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    uuids = [pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
    cuda_uuids = ["GPU-" + str(torch.cuda.get_device_properties(d).uuid) for d in range(n)]
    print("nvml devices:", count, "uuids match cuda:", sorted(uuids) == sorted(cuda_uuids))
except ImportError as e:
    print("nvml:", "skipped" if str(e) == "skipped" else "pynvml not installed")
