"""A Qwen3-MoE-shaped MoE layer with its experts split over ranks by
moejit.torch.distributed, in both token-exchange modes.

    torchrun --nproc-per-node 2 examples/expert_parallel.py            # NCCL, GPU per rank
    torchrun --nproc-per-node 2 examples/expert_parallel.py --backend gloo --hidden 128 \\
        --intermediate 64 --experts 10 --tokens 32                     # CPU, the op's reference

Every rank builds the same random layer (router and experts, one seed),
keeps its share of the experts, and routes its own tokens the Qwen3 way
(softmax over the router's logits, top k, renormalised); with --uneven,
rank r gets tokens * r // (world - 1) of them (rank 0 none). Each mode's y
is checked against the whole layer run on the rank alone (moejit's op with
every expert), then timed; the script prints per rank its tokens, the rows
each mode moved and the time per step, and exits 1 if a check fails. With
--combine batch-invariant on two ranks the two modes must agree bit for
bit (see moejit.torch.distributed).
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import moejit.torch as mt
import moejit.torch.distributed as ep

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
TOLERANCE = {torch.bfloat16: 2e-2, torch.float16: 5e-3, torch.float32: 1e-4}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=1024, help="tokens per rank")
    p.add_argument("--uneven", action="store_true",
                   help="rank r gets tokens * r // (world - 1) tokens")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--intermediate", type=int, default=768)
    p.add_argument("--experts", type=int, default=128)
    p.add_argument("--top-k", type=int, default=8)
    p.add_argument("--dtype", choices=DTYPES, default="bf16")
    p.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto",
                   help="auto: nccl with a GPU per rank, gloo otherwise")
    p.add_argument("--combine", choices=["deterministic", "fast", "batch-invariant"],
                   help="moejit's combine mode (sets MOEJIT_COMBINE)")
    p.add_argument("--steps", type=int, default=20, help="timed steps per mode")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def init_distributed(backend: str) -> torch.device:
    """Joins torchrun's process group; returns this rank's device."""
    cuda = torch.cuda.is_available() and backend != "gloo"
    if backend == "auto":
        backend = "nccl" if cuda else "gloo"
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend, device_id=device if cuda else None)
    return device


def make_layer(args, device: torch.device):
    """The whole layer, the same on every rank: router [E, H], gate_up
    [E, 2I, H], down [E, H, I], weights ~ N(0, 1/fan_in)."""
    g = torch.Generator().manual_seed(args.seed)
    h, i, e = args.hidden, args.intermediate, args.experts
    dtype = DTYPES[args.dtype]
    router = torch.randn(e, h, generator=g) / h ** 0.5
    gate_up = torch.randn(e, 2 * i, h, generator=g) / h ** 0.5
    down = torch.randn(e, h, i, generator=g) / i ** 0.5
    return router.to(device, dtype), gate_up.to(device, dtype), down.to(device, dtype)


def make_tokens(args, tokens: int, rank: int, device: torch.device) -> torch.Tensor:
    g = torch.Generator().manual_seed(args.seed * 1000 + rank + 1)
    return torch.randn(tokens, args.hidden, generator=g).to(device, DTYPES[args.dtype])


def route(x: torch.Tensor, router: torch.Tensor, k: int):
    """Qwen3-MoE's routing: top k of the softmax, renormalised."""
    probs = torch.softmax((x @ router.t()).float(), dim=-1)
    weights, ids = torch.topk(probs, k, dim=-1)
    return ids.to(torch.int32), weights / weights.sum(dim=-1, keepdim=True)


def rank_tokens(args, rank: int, world: int) -> int:
    if not args.uneven or world == 1:
        return args.tokens
    return args.tokens * rank // (world - 1)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(step, steps: int, device: torch.device):
    """Median milliseconds of `step` over `steps` runs, each started after
    a barrier so that every rank's step covers the same exchange."""
    times = []
    for _ in range(steps):
        dist.barrier()
        synchronize(device)
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.combine:
        os.environ["MOEJIT_COMBINE"] = args.combine
    device = init_distributed(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    router, gate_up, down = make_layer(args, device)
    tokens = rank_tokens(args, rank, world)
    x = make_tokens(args, tokens, rank, device)
    ids, weights = route(x, router, args.top_k)
    local_gate_up, local_down = ep.shard_experts(gate_up, down, rank, world)
    layer = ep.ExpertParallel(local_gate_up, local_down, args.experts)
    whole = mt.fused_experts(x, gate_up, down, ids, weights)
    first, count = ep.expert_ranges(args.experts, world)[rank]
    lines = [f"rank {rank}/{world} ({dist.get_backend()}, {device}): {tokens} tokens, "
             f"experts [{first}, {first + count})"]
    ok, outputs = True, {}
    for mode in ep.MODES:
        y = layer(x, ids, weights, mode=mode)
        outputs[mode] = y
        error = 0.0
        if tokens:
            error = float((y.double() - whole.double()).norm() / whole.double().norm())
        good = error < TOLERANCE[x.dtype]
        ok &= good
        ms = time_steps(lambda: layer(x, ids, weights, mode=mode), args.steps, device)
        stages = []
        layer(x, ids, weights, mode=mode, stages=stages)
        synchronize(device)
        parts = ep.stage_times(stages) if len(stages) > 1 else {}
        moved = ""
        if mode == "all_to_all":
            moved = (f", rows sent {layer.last_exchange['sent']} received "
                     f"{layer.last_exchange['received']}")
        lines.append(f"  {mode:10s} {ms:8.3f} ms/step (" +
                     ", ".join(f"{k} {v:.3f}" for k, v in parts.items() if k != "total") +
                     f"){moved}; error vs the whole layer {error:.2e} "
                     f"{'ok' if good else 'FAILED'}")
    same = torch.equal(outputs["all_gather"], outputs["all_to_all"])
    lines.append(f"  the two modes bitwise equal: {'yes' if same else 'no'}")
    if args.combine == "batch-invariant" and world == 2 and not same:
        lines.append("  FAILED: batch-invariant on two ranks must give the same bits")
        ok = False
    # One rank prints at a time, in rank order.
    for r in range(world):
        if r == rank:
            print("\n".join(lines), flush=True)
        dist.barrier()
    failed = torch.tensor([0 if ok else 1], device=device)
    dist.all_reduce(failed)
    dist.destroy_process_group()
    return 1 if int(failed.item()) else 0


if __name__ == "__main__":
    sys.exit(main())
