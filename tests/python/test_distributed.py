"""moejit.torch.distributed on the gloo backend: 1, 2 and 3 CPU processes
(the op's PyTorch reference computes the experts), both modes, experts
split unevenly, a rank with no experts, ranks with no tokens, ids no rank
holds; every rank's y against one process running the whole layer. Where
there are GPUs, the same on NCCL with a GPU per rank (as many ranks as
GPUs), plus the two modes' bits and a CUDA graph of all_gather."""

import os
import sys
import tempfile
import unittest
from typing import NamedTuple, Tuple
from unittest import mock

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import moejit.torch as mt
import moejit.torch.distributed as ep


class Case(NamedTuple):
    name: str
    experts: int
    k: int
    tokens: Tuple[int, ...]  # per rank; the world size is its length
    dtype: torch.dtype = torch.float32
    hidden: int = 64
    intermediate: int = 32


CASES = [
    Case("uneven_split", 7, 3, (5, 9)),
    Case("uneven_split_bf16", 7, 3, (11, 4), torch.bfloat16),
    Case("empty_rank", 6, 2, (8, 0)),
    Case("all_empty", 4, 2, (0, 0)),
    Case("one_rank", 5, 2, (9,)),
    Case("rank_without_experts", 2, 2, (4, 0, 7)),
    Case("three_ranks", 8, 2, (3, 5, 2), torch.bfloat16),
]

TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2}


def make_case(case: Case):
    """The whole layer's weights and every rank's (x, ids, weights), the
    same in every process. Some slots hold ids no rank has (-1, E + 3)."""
    g = torch.Generator().manual_seed(len(case.name) * 1000 + case.experts)
    h, i, e = case.hidden, case.intermediate, case.experts
    gate_up = (torch.randn(e, 2 * i, h, generator=g) / h ** 0.5).to(case.dtype)
    down = (torch.randn(e, h, i, generator=g) / i ** 0.5).to(case.dtype)
    per_rank = []
    for tokens in case.tokens:
        x = torch.randn(tokens, h, generator=g).to(case.dtype)
        ids = torch.argsort(torch.rand(tokens, e, generator=g), dim=1)[:, :case.k]
        if tokens >= 3:
            ids[0, 0] = -1
            ids[2, case.k - 1] = e + 3
        weights = torch.softmax(torch.randn(tokens, case.k, generator=g), dim=-1)
        per_rank.append((x, ids.to(torch.int32), weights))
    return gate_up, down, per_rank


def worker(rank: int, world: int, init_file: str, out_dir: str, backend: str) -> None:
    """One rank: every case of this world size in both modes, bounded
    all_gather, rows sent; on NCCL also the modes' bits in the
    batch-invariant combine and a CUDA graph of the bounded all_gather.
    Results go to out_dir/rank{rank}.pt, on the CPU."""
    device = torch.device("cpu")
    if backend == "nccl":
        os.environ["MOEJIT_COMBINE"] = "batch-invariant"
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method="file://" + init_file, rank=rank,
                            world_size=world, device_id=device if backend == "nccl" else None)
    results = {}
    for case in CASES:
        if len(case.tokens) != world:
            continue
        gate_up, down, per_rank = make_case(case)
        local_gate_up, local_down = (w.to(device) for w in
                                     ep.shard_experts(gate_up, down, rank, world))
        layer = ep.ExpertParallel(local_gate_up, local_down, case.experts)
        x, ids, weights = (t.to(device) for t in per_rank[rank])
        for mode in ep.MODES:
            stages = []
            results[(case.name, mode)] = layer(x, ids, weights, mode=mode, stages=stages).cpu()
            if x.shape[0] and mode == "all_to_all":
                results[(case.name, "stages")] = sorted(ep.stage_times(stages))
        # all_gather padded to a fixed bound: no count exchange, same result.
        bounded = ep.ExpertParallel(local_gate_up, local_down, case.experts,
                                    max_tokens=max(case.tokens) + 3)
        results[(case.name, "bounded")] = bounded(x, ids, weights).cpu()
        results[(case.name, "sent")] = layer.last_exchange["sent"]
        if backend == "nccl":
            results[(case.name, "graph")] = graph_replay(bounded, x, ids, weights).cpu()
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def graph_replay(layer, x, ids, weights) -> torch.Tensor:
    """The layer's all_gather captured in a CUDA graph on inputs of zeros,
    then replayed on (x, ids, weights) copied in."""
    static = [torch.zeros_like(x), torch.full_like(ids, -1), torch.zeros_like(weights)]
    layer(*static)  # the op's kernels bound before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = layer(*static)
    for buffer, value in zip(static, (x, ids, weights)):
        buffer.copy_(value)
    graph.replay()
    torch.cuda.synchronize()
    return y.clone()


GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0


class OnGloo(unittest.TestCase):
    backend = "gloo"
    tolerance = TOLERANCE

    def run_world(self, world: int):
        with tempfile.TemporaryDirectory() as tmp:
            mp.spawn(worker, args=(world, os.path.join(tmp, "init"), tmp, self.backend),
                     nprocs=world)
            results = [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(world)]
        checked = 0
        for case in CASES:
            if len(case.tokens) != world:
                continue
            gate_up, down, per_rank = make_case(case)
            for rank, (x, ids, weights) in enumerate(per_rank):
                whole = mt.reference(x, gate_up, down, ids, weights)
                with self.subTest(case=case.name, rank=rank, mode="bounded"):
                    self.assertTrue(torch.equal(results[rank][(case.name, "bounded")],
                                                results[rank][(case.name, "all_gather")]))
                for mode in ep.MODES:
                    with self.subTest(case=case.name, rank=rank, mode=mode):
                        y = results[rank][(case.name, mode)]
                        self.assertEqual(y.shape, x.shape)
                        self.assertEqual(y.dtype, x.dtype)
                        if x.shape[0]:
                            error = float((y.double() - whole.double()).norm() /
                                          whole.double().norm())
                            self.assertLess(error, self.tolerance[case.dtype])
                            checked += 1
                if self.backend == "nccl":
                    self.check_nccl(results[rank], case, rank, world)
                # A token goes once to each rank holding one of its experts.
                owners = ep.expert_owners(case.experts, world)
                held = [set(owners[[e for e in row if 0 <= e < case.experts]].tolist())
                        for row in ids.tolist()]
                self.assertEqual(results[rank][(case.name, "sent")],
                                 [sum(r in h for h in held) for r in range(world)])
                if x.shape[0]:
                    self.assertEqual(results[rank][(case.name, "stages")],
                                     sorted(["prepare", "dispatch", "experts", "combine",
                                             "total"]))
        return checked

    def test_one_rank(self):
        self.assertGreater(self.run_world(1), 0)

    def test_two_ranks(self):
        self.assertGreater(self.run_world(2), 0)

    def test_three_ranks(self):
        self.assertGreater(self.run_world(3), 0)


@unittest.skipUnless(GPUS >= 1, "needs a CUDA GPU per rank (runs in tools/bench/ep_round.sh)")
class OnNccl(OnGloo):
    """The same on NCCL, a GPU per rank, moejit's kernels in the
    batch-invariant combine; worlds larger than the GPUs skip."""
    backend = "nccl"
    tolerance = {torch.float32: 1e-4, torch.bfloat16: 2e-2}

    def run_world(self, world: int):
        if world > GPUS:
            self.skipTest(f"{world} ranks need {world} GPUs ({GPUS} here)")
        return super().run_world(world)

    def check_nccl(self, results, case, rank, world):
        with self.subTest(case=case.name, rank=rank, mode="graph"):
            self.assertTrue(torch.equal(results[(case.name, "graph")],
                                        results[(case.name, "bounded")]))
        if world <= 2:
            # A token's share is the same bits in any batch, and a sum of
            # two shares rounds alike in NCCL and in all_to_all's combine.
            with self.subTest(case=case.name, rank=rank, mode="bitwise"):
                self.assertTrue(torch.equal(results[(case.name, "all_gather")],
                                            results[(case.name, "all_to_all")]))


class Partition(unittest.TestCase):
    def test_ranges_cover_every_expert_once(self):
        for experts in (1, 2, 7, 128):
            for world in (1, 2, 3, 8):
                ranges = ep.expert_ranges(experts, world)
                self.assertEqual(len(ranges), world)
                self.assertEqual(sum(c for _, c in ranges), experts)
                self.assertEqual([f for f, _ in ranges],
                                 [sum(c for _, c in ranges[:r]) for r in range(world)])
                self.assertLessEqual(max(c for _, c in ranges) - min(c for _, c in ranges), 1)
                owners = ep.expert_owners(experts, world)
                for rank in range(world):
                    mapping = ep.local_expert_map(experts, rank, world)
                    mine = (owners == rank).nonzero().flatten()
                    self.assertTrue(torch.equal(mapping[mine].long(),
                                                torch.arange(len(mine))))
                    self.assertTrue(bool((mapping[owners != rank] == -1).all()))

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "at least 1"):
            ep.expert_ranges(0, 2)
        with self.assertRaisesRegex(ValueError, "outside a world"):
            ep.local_expert_map(4, 2, 2)
        gate_up, down = torch.zeros(4, 16, 8), torch.zeros(4, 8, 8)
        for rank in (-1, 2):  # (-1 took the last rank's share)
            with self.assertRaisesRegex(ValueError, f"rank {rank} is outside a world of 2"):
                ep.shard_experts(gate_up, down, rank, 2)


class Arguments(unittest.TestCase):
    """Argument checks in a one-process world (no collective runs)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        dist.init_process_group("gloo", init_method="file://" + os.path.join(cls.tmp.name, "i"),
                                rank=0, world_size=1)

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()
        cls.tmp.cleanup()

    def test_errors_name_the_problem(self):
        gate_up, down, per_rank = make_case(CASES[0])
        with self.assertRaisesRegex(ValueError, "mode 'ring'"):
            ep.ExpertParallel(gate_up, down, CASES[0].experts, mode="ring")
        with self.assertRaisesRegex(ValueError, r"holds experts \[0, 6\)"):
            ep.ExpertParallel(gate_up, down, 6)
        layer = ep.ExpertParallel(gate_up, down, CASES[0].experts)
        x, ids, weights = per_rank[0]
        with self.assertRaisesRegex(ValueError, "must be \\[tokens, 64\\]"):
            layer(x[:, :10], ids, weights)
        with self.assertRaisesRegex(ValueError, "must both be"):
            layer(x, ids[:2], weights)
        with self.assertRaisesRegex(ValueError, "mode 'x'"):
            layer(x, ids, weights, mode="x")
        # The weights move with the module (buffers, or parameters as given);
        # the expert map stays int32.
        moved = ep.ExpertParallel(gate_up.clone(), torch.nn.Parameter(down.clone()),
                                  CASES[0].experts).to(torch.bfloat16)
        self.assertEqual(moved.gate_up_proj.dtype, torch.bfloat16)
        self.assertEqual(moved.down_proj.dtype, torch.bfloat16)
        self.assertIsInstance(moved.down_proj, torch.nn.Parameter)
        self.assertEqual(moved.expert_map.dtype, torch.int32)
        for mode in ep.MODES:
            # Refused before any collective: the op's own checks, up front.
            with self.assertRaisesRegex(TypeError, "top_k_index .* int32 or int64"):
                layer(x, ids.float(), weights, mode=mode)
            with self.assertRaisesRegex(TypeError, "top_k_weights .* float32"):
                layer(x, ids, weights.half(), mode=mode)
        with self.assertRaisesRegex(ValueError, "at least 1"):
            ep.ExpertParallel(gate_up, down, CASES[0].experts, max_tokens=0)
        # A process outside the group: torch gives it rank and size -1.
        with mock.patch.object(dist, "get_rank", return_value=-1), \
                mock.patch.object(dist, "get_world_size", return_value=-1):
            with self.assertRaisesRegex(ValueError, "not in the group"):
                ep.ExpertParallel(gate_up, down, CASES[0].experts)
        with mock.patch.object(dist, "get_rank", return_value=-1):
            with self.assertRaisesRegex(ValueError, "not in the group"):
                ep.ExpertParallel(gate_up, down, CASES[0].experts)
        with mock.patch.object(dist, "get_rank", return_value=1):
            with self.assertRaisesRegex(ValueError, "rank 1 is outside a world of 1"):
                ep.ExpertParallel(gate_up, down, CASES[0].experts)
        bounded = ep.ExpertParallel(gate_up, down, CASES[0].experts, max_tokens=4)
        with self.assertRaisesRegex(ValueError, "5 tokens on rank 0, above the layer's "
                                                "max_tokens 4"):
            bounded(x, ids, weights)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + ["-v"])
