"""The torch op against the kernels it wraps, on a GPU: the host time of one
eager call at T=1 (torch.ops.moejit, moejit.torch.fused_experts, the bare
ctypes launch they are built on, and one torch kernel launch for scale), and
the op's time at the seed shape against `KernelSet.run` with the same
tensors (the path `moejit bench` times), interleaved, L2 flushed, random
data, median. Prints one line per figure; --json writes them to a file.

    python3 tools/bench/torch_op.py [--tokens 128 8192] [--runs 50] [--json FILE]
"""

import argparse
import json
import statistics
import time

import torch

import moejit.torch as mt

SEED = mt.Shape(k=8, hidden=2048, intermediate=768, experts=128, dtype="bf16")
FLUSH_BYTES = 256 << 20


def inputs(tokens, shape=SEED, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = torch.bfloat16

    def rand(*size, scale=1.0):
        return (torch.randn(*size, generator=g, device="cuda") * scale).to(dtype)

    x = rand(tokens, shape.hidden)
    gate_up = rand(shape.experts, 2 * shape.intermediate, shape.hidden, scale=shape.hidden ** -0.5)
    down = rand(shape.experts, shape.hidden, shape.intermediate, scale=shape.intermediate ** -0.5)
    ids = torch.argsort(torch.rand(tokens, shape.experts, generator=g, device="cuda"), dim=1)
    ids = ids[:, :shape.k].to(torch.int32).contiguous()
    weights = torch.softmax(torch.randn(tokens, shape.k, generator=g, device="cuda"), dim=-1)
    return x, gate_up, down, ids, weights


def bare_launcher(args, tokens=None):
    """KernelSet.run with the workspace and y allocated once: what the op
    adds on top of the C ABI is everything else. tokens=0 launches nothing:
    the C ABI call and its argument checks alone."""
    x, gate_up, down, ids, weights = args
    kernels = mt._kernel_set(x.device, mt.check_arguments(*args, None))
    tokens = x.shape[0] if tokens is None else tokens
    nbytes = kernels.workspace_bytes(tokens)
    workspace = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    stream = torch.cuda.current_stream().cuda_stream
    pointers = (x.data_ptr(), gate_up.data_ptr(), down.data_ptr(), ids.data_ptr(),
                weights.data_ptr(), y.data_ptr(), tokens, workspace.data_ptr(), nbytes, stream)
    return lambda: kernels.run(*pointers)


def host_us(calls, per_round=100, rounds=21):
    """Host microseconds per call of each of `calls` (name -> callable),
    the variants interleaved round by round, with the GPU held busy by a
    sleep kernel so that the calls only queue work and the loop times the
    host alone. Median over the rounds."""
    samples = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            torch.cuda.synchronize()
            torch.cuda._sleep(100_000_000)
            start = time.perf_counter()
            for _ in range(per_round):
                call()
            samples[name].append((time.perf_counter() - start) / per_round * 1e6)
    torch.cuda.synchronize()
    return {name: statistics.median(values) for name, values in samples.items()}


def gpu_ms(calls, runs):
    """Median event time of each of `calls`, interleaved, L2 flushed before each."""
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    for call in calls:
        for _ in range(5):
            call()
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(runs)] for _ in calls]
    for i in range(runs):
        for j, call in enumerate(calls):
            flush.fill_(i & 0xff)
            events[j][i][0].record()
            call()
            events[j][i][1].record()
    torch.cuda.synchronize()
    return [statistics.median(a.elapsed_time(b) for a, b in e) for e in events]


def wall_ms(call, calls=20, repeats=5):
    """Milliseconds per call of back-to-back calls, host and GPU together."""
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 8192])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", help="write the figures to this file")
    options = parser.parse_args()
    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}

    one = inputs(1)
    expected = mt.reference(*one)
    got = torch.ops.moejit.fused_experts(*one, None)
    torch.cuda.synchronize()
    results["t1_rel_error"] = float((got.float() - expected.float()).norm() /
                                    expected.float().norm())
    scratch = torch.zeros(1024, device="cuda")
    host = host_us({
        "op": lambda: torch.ops.moejit.fused_experts(*one, None),
        "fused_experts": lambda: mt.fused_experts(*one),
        "bare_ctypes": bare_launcher(one),
        "bare_ctypes_no_launch": bare_launcher(one, tokens=0),
        "one_torch_kernel": lambda: scratch.add_(1),
    })
    for name, value in host.items():
        results[f"host_us_t1_{name}"] = value
    # Where the op's host time goes, piece by piece (no GPU work queued).
    kernels = mt._kernel_set(one[0].device, mt.check_arguments(*one, None))
    index = one[0].get_device()
    pieces = {
        "check_arguments": lambda: mt.check_arguments(*one, None),
        "empty_like": lambda: torch.empty_like(one[0]),
        "empty_workspace": lambda: torch.empty(kernels.workspace_bytes(1), dtype=torch.uint8,
                                               device="cuda"),
        "current_stream": lambda: torch.cuda.current_stream(one[0].device).cuda_stream,
        "raw_stream": lambda: torch._C._cuda_getCurrentRawStream(index),
        "kernel_set_lookup": lambda: mt._kernel_set(one[0].device, kernels.shape),
    }
    for name, value in host_us(pieces, rounds=5).items():
        results[f"host_us_piece_{name}"] = value
    for tokens in options.tokens:
        args = inputs(tokens, seed=tokens)
        op = lambda: torch.ops.moejit.fused_experts(*args, None)  # noqa: E731
        bare = bare_launcher(args)
        op_ms, bare_ms = gpu_ms([op, bare], options.runs)
        results[f"t{tokens}_op_wall_ms"] = wall_ms(op)
        results[f"t{tokens}_bare_wall_ms"] = wall_ms(bare)
        results[f"t{tokens}_op_ms"] = op_ms
        results[f"t{tokens}_bare_ms"] = bare_ms
        results[f"t{tokens}_op_overhead_pct"] = 100 * (op_ms / bare_ms - 1)
    for key, value in results.items():
        print(f"{key} {value:.4f}" if isinstance(value, float) else f"{key} {value}")
    if options.json:
        with open(options.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
