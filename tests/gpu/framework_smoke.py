"""A few steps of real framework work whose printed results must be identical natively and through
vmcuda (tests/gpu/run-driver-on-device.sh compares them). Deterministic: fixed seeds, deterministic
algorithms, values rounded to what one GPU model reproduces run after run.

    python3 framework_smoke.py torch|cupy|torch_ipc
"""
import sys


def torch_steps():
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dev = torch.device("cuda")
    print("devices", torch.cuda.device_count(), torch.cuda.get_device_name(0))
    a = torch.arange(256 * 256, dtype=torch.float32, device=dev).reshape(256, 256) % 7 - 3
    print("matmul sum", float((a @ a).sum().item()))
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 128, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    for step in range(20):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % 5 == 4:
            print("step", step + 1, "loss", round(loss.item(), 4))
    torch.cuda.synchronize()
    print("memory allocated > 0:", torch.cuda.memory_allocated() > 0)


def cupy_steps():
    import cupy as cp

    print("devices", cp.cuda.runtime.getDeviceCount())
    a = cp.arange(1 << 20, dtype=cp.float32)
    print("elementwise+reduce", float((a * 2 + 1).sum()))
    m = (cp.arange(128 * 128, dtype=cp.float32).reshape(128, 128) % 5) - 2
    print("matmul sum", float((m @ m).sum()))
    square = cp.RawKernel(r'''
extern "C" __global__ void square(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}''', "square")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.empty_like(x)
    square((4,), (256,), (x, y, cp.int32(1000)))
    print("raw kernel", float(y.sum()))
    print("host round trip", cp.asnumpy(y[:5]).tolist())


def _add_one_in_child(queue, done):
    import torch

    t = queue.get()  # a CUDA tensor of the parent's, opened here through CUDA IPC
    t.add_(1)
    torch.cuda.synchronize()
    done.put((str(t.device), float(t.sum().item())))


def torch_ipc_steps():
    """CUDA tensors shared between processes (torch.multiprocessing: CUDA IPC of memory and events): the child
    changes the parent's tensor in place, and the parent sees it."""
    import torch
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Queue()
    t = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    child = ctx.Process(target=_add_one_in_child, args=(queue, done))
    child.start()
    queue.put(t)
    print("child saw", done.get(timeout=120))
    child.join(timeout=120)
    torch.cuda.synchronize()
    print("child exit code", child.exitcode)
    print("parent sees the child's writes", float(t.sum().item()), bool(torch.equal(t, torch.arange(1 << 20, dtype=torch.float32, device="cuda") + 1)))


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which == "torch":
        torch_steps()
    elif which == "cupy":
        cupy_steps()
    elif which == "torch_ipc":
        torch_ipc_steps()
    else:
        sys.exit("usage: framework_smoke.py torch|cupy|torch_ipc")
