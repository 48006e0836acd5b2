"""Expert parallelism's two modes at the seed shape against one GPU doing
all the experts (issue 11's benchmark).

    torchrun --nproc-per-node 2 tools/bench/ep_bench.py [--tokens 128 1024 8192] [--json F]

For each T (tokens per rank): both modes of moejit.torch.distributed,
the median over --steps of each stage (dispatch and combine are the
collectives; experts is moejit's op; prepare the routing bookkeeping and
the size exchange) and of the whole step, timed with CUDA events on every
rank (the table shows the slowest rank's); then rank 0 alone runs the op
with every expert on all ranks' tokens (world * T). The layer, routing and
tokens are those of examples/expert_parallel.py. Rank 0 prints a markdown
table.
"""

import argparse
import json
import os
import statistics
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples"))
import expert_parallel as example  # noqa: E402

import moejit.torch as mt  # noqa: E402
import moejit.torch.distributed as ep  # noqa: E402


def median_stages(layer, x, ids, weights, mode, steps, device):
    """{stage: median ms} over `steps` calls, each after a barrier."""
    samples = {}
    for _ in range(steps):
        dist.barrier()
        example.synchronize(device)
        stages = []
        layer(x, ids, weights, mode=mode, stages=stages)
        example.synchronize(device)
        for name, ms in ep.stage_times(stages).items():
            samples.setdefault(name, []).append(ms)
    return {name: statistics.median(v) for name, v in samples.items()}


def slowest(times: dict, device) -> dict:
    """Each stage's largest median over the ranks."""
    names = sorted(times)
    t = torch.tensor([times[n] for n in names], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return dict(zip(names, t.tolist()))


def one_gpu_ms(args, gate_up, down, router, tokens, world, steps, device):
    """The op with every expert on world * tokens tokens, on this GPU."""
    x = torch.cat([example.make_tokens(args, tokens, r, device) for r in range(world)])
    ids, weights = example.route(x, router, args.top_k)
    mt.fused_experts(x, gate_up, down, ids, weights)
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        mt.fused_experts(x, gate_up, down, ids, weights)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, nargs="+", default=[128, 1024, 8192])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--json", help="write the rows to this file too")
    args, rest = p.parse_known_args()
    layer_args = example.parse_args(rest)
    device = example.init_distributed("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    router, gate_up, down = example.make_layer(layer_args, device)
    local_gate_up, local_down = ep.shard_experts(gate_up, down, rank, world)
    layer = ep.ExpertParallel(local_gate_up, local_down, layer_args.experts)
    rows = []
    for tokens in args.tokens:
        x = example.make_tokens(layer_args, tokens, rank, device)
        ids, weights = example.route(x, router, layer_args.top_k)
        for mode in ep.MODES:
            layer(x, ids, weights, mode=mode)  # binds the kernels, warms the collectives
            times = slowest(median_stages(layer, x, ids, weights, mode, args.steps, device),
                            device)
            rows.append({"tokens_per_rank": tokens, "mode": mode, **times})
        dist.barrier()
        if rank == 0:
            ms = one_gpu_ms(layer_args, gate_up, down, router, tokens, world, args.steps,
                            device)
            rows.append({"tokens_per_rank": tokens, "mode": f"one GPU, {world * tokens} tokens",
                         "experts": ms, "total": ms})
        dist.barrier()
    if rank == 0:
        print(f"| T per rank | mode | prepare | dispatch | experts | combine | total (ms, "
              f"{world} GPUs) |\n|---|---|---|---|---|---|---|")
        for r in rows:
            cells = [f"{r[k]:.3f}" if k in r else "" for k in
                     ("prepare", "dispatch", "experts", "combine", "total")]
            print(f"| {r['tokens_per_rank']} | {r['mode']} | " + " | ".join(cells) + " |")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"world": world, "rows": rows}, f, indent=1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
