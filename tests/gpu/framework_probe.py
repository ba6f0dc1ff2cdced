"""What the frameworks of issue 16 need, probe by probe: each probe prints one deterministic line (its
result, or "FAILED <exception>") so that a native run and a vmcuda run can be compared line by line, and
one probe failing does not hide the others. Timings go to stderr ("time NAME MS"), never to stdout.

    python3 framework_probe.py torch|cupy|jax|nvml      (PROBE_ONLY=PREFIX: only the probes named so)

Run by tests/gpu/run-driver-on-device.sh (section "probes"), natively and through vmcuda.
"""
import os
import sys
import time


def probe(name, fn):
    only = os.environ.get("PROBE_ONLY")  # a prefix of probe names, to look at one probe alone
    if only and not name.startswith(only):
        return
    try:
        print(name + ":", fn())
    except Exception as e:  # the point is to report every failure, whatever it is
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(name + ": FAILED", type(e).__name__ + ":", text[:160])
    sys.stdout.flush()


def timed(name, fn, steps):
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t0) * 1000.0 / steps


def torch_probes():
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    dev = torch.device("cuda")

    probe("available", lambda: (torch.cuda.is_available(), torch.cuda.device_count(), torch.cuda.get_device_name(0)))
    probe("elementwise", lambda: float((torch.arange(1000, device=dev, dtype=torch.float32) * 3 + 1).sum().item()))
    probe("matmul", lambda: float((torch.ones(512, 512, device=dev) @ torch.ones(512, 512, device=dev)).sum().item()))

    def conv():
        torch.manual_seed(1)
        c = nn.Conv2d(3, 8, 3).to(dev)
        x = torch.randn(4, 3, 32, 32, device=dev, requires_grad=True)
        y = c(x).square().mean()
        y.backward()
        return round(y.item(), 4), round(x.grad.abs().sum().item(), 3)
    probe("conv2d (cuDNN) forward+backward", conv)

    def cnn():
        torch.manual_seed(2)
        m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).to(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        x = torch.randn(32, 3, 32, 32, device=dev)
        y = torch.randint(0, 10, (32,), device=dev)
        losses = []
        for _ in range(50):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return [round(l, 4) for l in losses[::10]] + [round(losses[-1], 4)]
    probe("cnn 50 steps", cnn)

    def transformer():
        torch.manual_seed(3)
        layer = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
        m = nn.Sequential(nn.Embedding(100, 128), nn.TransformerEncoder(layer, 2), nn.Linear(128, 100)).to(dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        x = torch.randint(0, 100, (8, 64), device=dev)
        losses = []
        for _ in range(50):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(x).reshape(-1, 100), x.reshape(-1))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return [round(l, 3) for l in losses[::10]] + [round(losses[-1], 3)]
    probe("transformer 50 steps", transformer)

    probe("synchronize + memory stats", lambda: (torch.cuda.synchronize(), torch.cuda.memory_allocated() > 0,
                                                 torch.cuda.max_memory_allocated() > 0))

    def graph():
        s = torch.cuda.Stream()
        x = torch.ones(1024, device=dev)
        y = torch.empty_like(x)
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            y.copy_(x * 2)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y.copy_(x * 2 + 1)
        x.fill_(3)
        g.replay()
        torch.cuda.synchronize()
        return float(y.sum().item())
    probe("cuda graph capture + replay", graph)

    def compiled():
        f = torch.compile(lambda a, b: (a.sin() * b + 1).sum())
        a = torch.linspace(0, 1, 4096, device=dev)
        return round(float(f(a, a).item()), 3)
    probe("torch.compile (Triton)", compiled)

    def pinned():
        h = torch.arange(1 << 20, dtype=torch.float32).pin_memory()
        d = h.to(dev, non_blocking=True)
        torch.cuda.synchronize()
        return h.is_pinned(), float(d.sum().item())
    probe("pin_memory + non_blocking copy", pinned)

    def gpt_step():
        torch.manual_seed(4)
        d, layers, heads, vocab, batch, seq = 768, 12, 12, 8192, 8, 512
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        m = nn.ModuleDict({"emb": nn.Embedding(vocab, d), "body": nn.TransformerEncoder(layer, layers),
                           "head": nn.Linear(d, vocab)}).to(dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
        x = torch.randint(0, vocab, (batch, seq), device=dev)
        mask = nn.Transformer.generate_square_subsequent_mask(seq, device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                h = m["body"](m["emb"](x), mask=mask, is_causal=True)
                loss = nn.functional.cross_entropy(m["head"](h).reshape(-1, vocab).float(), x.reshape(-1))
            loss.backward()
            opt.step()
            return loss

        for _ in range(3):
            step()
        torch.cuda.synchronize()
        # PROBE_GPT_STEPS: more timed steps, e.g. to count calls per step (VMCUDA_STATS, two step counts)
        n = int(os.environ.get("PROBE_GPT_STEPS", "10"))

        def steps():  # the GPU's time too: the last step is waited for
            for _ in range(n):
                step()
            torch.cuda.synchronize()
        ms = timed("gpt", steps, 1) / n
        torch.cuda.synchronize()
        print("time gpt_train_step_ms %.2f" % ms, file=sys.stderr)
        with torch.no_grad():
            one = x[:1, :128]

            def infer():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    m["head"](m["body"](m["emb"](one), mask=mask[:128, :128], is_causal=True))
                torch.cuda.synchronize()
            infer()
            print("time gpt_infer_batch1_ms %.2f" % timed("infer", infer, 20), file=sys.stderr)
        return "ran"
    probe("gpt-style training step (timed on stderr)", gpt_step)


def cupy_probes():
    import cupy as cp

    probe("devices", lambda: cp.cuda.runtime.getDeviceCount())
    probe("elementwise + reduction", lambda: float((cp.arange(10000, dtype=cp.float64) ** 2).sum()))
    probe("matmul (cuBLAS)", lambda: float((cp.ones((256, 256), dtype=cp.float32) @ cp.ones((256, 256), dtype=cp.float32)).sum()))
    probe("fft (cuFFT)", lambda: round(float(cp.abs(cp.fft.fft(cp.cos(cp.arange(1024) * 2 * cp.pi * 5 / 1024))).max()), 3))

    def rng():
        g = cp.random.default_rng(7)
        return round(float(g.random(100000, dtype=cp.float64).mean()), 4)
    probe("random (cuRAND)", rng)

    def raw():
        k = cp.RawKernel(r'''extern "C" __global__ void twice(const float *a, float *b, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = 2 * a[i]; }''', "twice")
        a = cp.arange(1000, dtype=cp.float32)
        b = cp.empty_like(a)
        k((4,), (256,), (a, b, cp.int32(1000)))
        return float(b.sum())
    probe("RawKernel (NVRTC)", raw)

    def streams():
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            a = cp.arange(1 << 20, dtype=cp.float32)
            b = (a * 3).sum()
        s.synchronize()
        return float(b)
    probe("stream", streams)


def jax_probes():
    import jax
    import jax.numpy as jnp

    probe("devices", lambda: [d.platform for d in jax.devices()])
    probe("jit matmul", lambda: float(jax.jit(lambda a: (a @ a).sum())(jnp.ones((256, 256), jnp.float32))))

    def mlp():
        key = jax.random.PRNGKey(0)
        k1, k2, k3 = jax.random.split(key, 3)
        params = {"w1": jax.random.normal(k1, (64, 128)) * 0.1, "w2": jax.random.normal(k2, (128, 10)) * 0.1}
        x = jax.random.normal(k3, (32, 64))
        y = jnp.arange(32) % 10

        def loss(p):
            logits = jnp.maximum(x @ p["w1"], 0) @ p["w2"]
            return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(32), y])

        @jax.jit
        def step(p):
            l, g = jax.value_and_grad(loss)(p)
            return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), l

        out = []
        for i in range(20):
            params, l = step(params)
            if i % 5 == 4:
                out.append(round(float(l), 4))
        return out
    probe("jit MLP training steps", mlp)


def nvml_probes():
    import pynvml

    pynvml.nvmlInit()
    probe("device count", lambda: pynvml.nvmlDeviceGetCount())
    probe("name", lambda: pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0)))
    probe("memory total", lambda: pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).total > 0)


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "torch"
    try:
        {"torch": torch_probes, "cupy": cupy_probes, "jax": jax_probes, "nvml": nvml_probes}[which]()
    except ImportError as e:
        print(which + ": not installed:", e)
