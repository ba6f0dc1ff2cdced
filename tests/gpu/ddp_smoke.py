"""PyTorch DistributedDataParallel over NCCL, one process per GPU, as users train on one machine with several GPUs.

Each rank trains the same small model on its own batches for a few steps; NCCL averages the gradients between the
processes (its P2P transport shares device memory between them: through cuMem and POSIX file descriptors by default,
through CUDA IPC with NCCL_CUMEM_ENABLE=0). Rank 0 prints what must not depend on where the GPUs are: the mean loss
of each step, an all_reduce of 1 Mi floats, and whether both ranks hold the same parameters afterwards. Through
vmcuda each process has its own session and worker (tests/gpu/run-multigpu.sh compares with a native run).
    python3 ddp_smoke.py [WORLD]   (WORLD: processes, default every GPU)
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1 + rank)
    for step in range(5):
        x = torch.randn(64, 256, generator=g).cuda()
        y = torch.randint(0, 10, (64,), generator=g).cuda()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        if rank == 0:
            print(f"step {step}: mean loss {mean.item() / world:.4f}", flush=True)
    t = torch.full((1 << 20,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    first = flat.clone()
    dist.broadcast(first, 0)
    same = torch.equal(first, flat)
    agree = torch.tensor([1 if same else 0], device="cuda")
    dist.all_reduce(agree)
    if rank == 0:
        print(f"all_reduce of 1 Mi floats: first {t[0].item():.1f}, last {t[-1].item():.1f}", flush=True)
        print(f"ranks holding rank 0's parameters: {int(agree.item())} of {world}", flush=True)
    timed_steps(rank)
    dist.barrier()
    dist.destroy_process_group()


def timed_steps(rank, warmup=5, steps=30):
    """The mean time of a DDP step of a larger model (8 layers of 4096 x 4096, batch 512), on stderr from rank 0: a
    figure for tests/gpu/run-multigpu.sh to put beside the native one, not part of the compared output."""
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
    ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers).cuda(), device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(512, 4096, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for step in range(warmup + steps):
        if step == warmup:
            torch.cuda.synchronize()
            start.record()
        loss = ddp(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    end.record()
    torch.cuda.synchronize()
    if rank == 0:
        print(f"ddp timed: {start.elapsed_time(end) / steps:.2f} ms per step (8 x 4096^2 layers, batch 512)",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else torch.cuda.device_count()
    if world < 2:
        sys.exit("ddp_smoke: needs two GPUs or more")
    mp.spawn(run, args=(world, int(os.environ.get("DDP_PORT", "29511"))), nprocs=world)
    print(f"ddp: {world} processes done", flush=True)
