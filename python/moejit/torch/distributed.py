"""Expert parallelism over a torch.distributed process group.

    import moejit.torch.distributed as ep
    gate_up_local, down_local = ep.shard_experts(gate_up_proj, down_proj, rank, world_size)
    layer = ep.ExpertParallel(gate_up_local, down_local, num_experts=E, mode="all_to_all")
    y = layer(x, top_k_index, top_k_weights)   # this rank's tokens in, their y out

Each rank holds a contiguous range of the global experts (`expert_ranges`:
E // W each, the first E % W ranks one more; a rank may hold none when
E < W) and its own tokens (any number, none included). moejit's op is the
expert computation, with the global-to-local expert map; the tokens move
with torch.distributed's own collectives (NCCL on CUDA tensors, gloo on CPU
tensors, where the op runs its PyTorch reference):

- ``all_gather``: every rank gathers every rank's tokens (padded to the
  largest count), computes its local experts' share of all of them, and a
  reduce-scatter sums the shares back to the tokens' ranks, in the op's
  dtype (what vLLM does without a dedicated all-to-all backend).
- ``all_to_all``: a token goes only to the ranks that own at least one of
  its k experts, once per rank (with all its slots: the receiver's expert
  map drops the others); that rank returns its share, and the token's rank sums the shares in fp32 in rank
  order and rounds once. The split sizes are exchanged on the device;
  reading them, which `all_to_all_single` needs as host lists, is the one
  host synchronisation with torch >= 2.6 (before it, CUDA's nonzero() of
  the rows to send is a second).

With two ranks and the op in its batch-invariant combine mode
(`MOEJIT_COMBINE=batch-invariant`), the two modes give the same bits: a
token's share does not depend on the batch it was computed in, and a sum
of two shares rounds the same whether NCCL or this module adds them.
With more ranks, ``all_gather``'s reduce-scatter rounds at each of its
steps. Neither mode has a backward.
"""

import time
from typing import List, Optional, Tuple

import torch
import torch.distributed as dist

from . import _checked_shape, fused_experts

MODES = ("all_gather", "all_to_all")


def expert_ranges(num_experts: int, world_size: int) -> List[Tuple[int, int]]:
    """(first global expert, count) of each rank: contiguous ranges, the
    first num_experts % world_size ranks one expert more."""
    if num_experts < 1 or world_size < 1:
        raise ValueError(f"moejit: {num_experts} experts over {world_size} ranks; both must be "
                         f"at least 1")
    base, extra = divmod(num_experts, world_size)
    ranges, first = [], 0
    for rank in range(world_size):
        count = base + (1 if rank < extra else 0)
        ranges.append((first, count))
        first += count
    return ranges


def expert_owners(num_experts: int, world_size: int,
                  device: Optional[torch.device] = None) -> torch.Tensor:
    """int64 [num_experts]: the rank holding each global expert."""
    owners = [rank for rank, (_, count) in enumerate(expert_ranges(num_experts, world_size))
              for _ in range(count)]
    return torch.tensor(owners, dtype=torch.int64, device=device)


def _check_rank(rank: int, world_size: int) -> None:
    # (A rank of -1 would index the last rank's share of expert_ranges.)
    if not 0 <= rank < world_size:
        raise ValueError(f"moejit: rank {rank} is outside a world of {world_size}")


def local_expert_map(num_experts: int, rank: int, world_size: int,
                     device: Optional[torch.device] = None) -> torch.Tensor:
    """The op's expert_map for `rank`: int32 [num_experts], a global id's
    local index on this rank, -1 where another rank holds it."""
    _check_rank(rank, world_size)
    first, count = expert_ranges(num_experts, world_size)[rank]
    mapping = torch.full((num_experts,), -1, dtype=torch.int32)
    mapping[first:first + count] = torch.arange(count, dtype=torch.int32)
    return mapping.to(device)


def shard_experts(gate_up_proj: torch.Tensor, down_proj: torch.Tensor, rank: int,
                  world_size: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Rank `rank`'s experts of the whole layer's [E, 2I, H] and [E, H, I]
    weights, as contiguous tensors."""
    _check_rank(rank, world_size)
    first, count = expert_ranges(gate_up_proj.shape[0], world_size)[rank]
    return (gate_up_proj[first:first + count].contiguous(),
            down_proj[first:first + count].contiguous())


class ExpertParallel(torch.nn.Module):
    """This rank's experts of a layer split over `group` (default: the
    world), and the token exchange of `mode` (see the module's text).
    gate_up_proj [E_local, 2I, H] and down_proj [E_local, H, I] must be the
    rank's `expert_ranges` share of `num_experts`. `max_tokens`, when
    given, bounds every rank's tokens per call (a serving runtime's largest
    batch): ``all_gather`` then pads to it instead of asking the ranks for
    their counts, and has no host synchronisation (a CUDA graph can hold
    it, collectives included, once the op's kernels are bound)."""

    def __init__(self, gate_up_proj: torch.Tensor, down_proj: torch.Tensor, num_experts: int,
                 group: Optional[dist.ProcessGroup] = None, mode: str = "all_gather",
                 max_tokens: Optional[int] = None):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("moejit: torch.distributed is not initialised "
                               "(init_process_group first)")
        self._check_mode(mode)
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"moejit: max_tokens is {max_tokens}; it must be at least 1")
        self.max_tokens = max_tokens
        self.group = group
        self.mode = mode
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        if self.rank < 0:  # (both are -1 in a process outside the group)
            raise ValueError(f"moejit: this process is not in the group (its rank there is "
                             f"{self.rank}); only the group's ranks hold its experts")
        _check_rank(self.rank, self.world_size)
        self.num_experts = num_experts
        first, count = expert_ranges(num_experts, self.world_size)[self.rank]
        if gate_up_proj.dim() != 3 or down_proj.dim() != 3 or \
                gate_up_proj.shape[0] != count or down_proj.shape[0] != count:
            raise ValueError(
                f"moejit: rank {self.rank} of {self.world_size} holds experts [{first}, "
                f"{first + count}) of {num_experts}, but gate_up_proj is "
                f"{tuple(gate_up_proj.shape)} and down_proj {tuple(down_proj.shape)} "
                f"(shard_experts gives the share)")
        # Parameters stay parameters; plain tensors become buffers, so that
        # .to() and .cuda() move the weights with the expert map.
        for name, weight in (("gate_up_proj", gate_up_proj), ("down_proj", down_proj)):
            if isinstance(weight, torch.nn.Parameter):
                setattr(self, name, weight)
            else:
                self.register_buffer(name, weight)
        device = gate_up_proj.device
        self.register_buffer("expert_map",
                             local_expert_map(num_experts, self.rank, self.world_size, device),
                             persistent=False)
        # Each global expert's rank, then `world_size` for ids no rank holds.
        self.register_buffer("owner_table", torch.cat([
            expert_owners(num_experts, self.world_size, device),
            torch.tensor([self.world_size], dtype=torch.int64, device=device)]),
            persistent=False)
        # Rows the last all_to_all call sent to and received from each rank.
        self.last_exchange = {"sent": [], "received": []}

    @staticmethod
    def _check_mode(mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"moejit: mode {mode!r} is not one of {', '.join(MODES)}")

    def forward(self, x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor,
                mode: Optional[str] = None, stages: Optional[list] = None) -> torch.Tensor:
        """y for this rank's tokens x [T, H] (T may be 0). `mode` overrides
        the layer's for this call. `stages`, when a list, receives
        (name, marker) pairs at the boundaries of the exchange and the
        compute (`stage_times` reads them)."""
        mode = self.mode if mode is None else mode
        self._check_mode(mode)
        if x.dim() != 2 or x.shape[1] != self.gate_up_proj.shape[2]:
            raise ValueError(f"moejit: x is {tuple(x.shape)}; it must be [tokens, "
                             f"{self.gate_up_proj.shape[2]}]")
        if top_k_index.dim() != 2 or top_k_index.shape[0] != x.shape[0] or \
                top_k_weights.shape != top_k_index.shape:
            raise ValueError(f"moejit: top_k_index {tuple(top_k_index.shape)} and top_k_weights "
                             f"{tuple(top_k_weights.shape)} must both be [{x.shape[0]}, k]")
        # Every argument the op would refuse, refused here, before any
        # collective: this rank raises at once, with the op's message, not
        # between two collectives. The other ranks are not told: they wait in
        # their next collective until the process group's timeout, as for
        # any rank that stops. (The op's cache of checked signatures: a
        # decode loop repeats one. A rank may hold no experts: _experts then
        # runs no op.)
        _checked_shape(x, self.gate_up_proj, self.down_proj, top_k_index, top_k_weights,
                       self.expert_map, no_experts_ok=True)
        clock = _Marks(stages, x.device)
        if mode == "all_gather":
            return self._all_gather(x, top_k_index, top_k_weights, clock)
        return self._all_to_all(x, top_k_index, top_k_weights, clock)

    def _experts(self, x: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """This rank's share of every row of x: the op with the local map;
        zeros where the rank holds no expert or gets no rows."""
        if self.gate_up_proj.shape[0] == 0 or x.shape[0] == 0:
            return torch.zeros_like(x)
        return fused_experts(x, self.gate_up_proj, self.down_proj, ids, weights, self.expert_map)

    def _all_gather(self, x, ids, weights, clock) -> torch.Tensor:
        tokens, hidden = x.shape
        k = ids.shape[1]
        if self.max_tokens is not None:
            if tokens > self.max_tokens:
                raise ValueError(f"moejit: {tokens} tokens on rank {self.rank}, above the "
                                 f"layer's max_tokens {self.max_tokens}")
            rows = self.max_tokens
        else:
            longest = torch.tensor([tokens], dtype=torch.int64, device=x.device)
            dist.all_reduce(longest, op=dist.ReduceOp.MAX, group=self.group)
            rows = int(longest.item())
            if rows == 0:
                return x.new_zeros(x.shape)
        # Padding rows route nowhere (id -1, weight 0); the longest rank sends
        # its own tensors.
        pad = rows - tokens
        x_pad, ids_pad, weights_pad = x, ids, weights
        if pad:
            x_pad = torch.cat([x, x.new_zeros(pad, hidden)])
            ids_pad = torch.cat([ids, ids.new_full((pad, k), -1)])
            weights_pad = torch.cat([weights, weights.new_zeros(pad, k)])
        world = self.world_size
        all_x = x.new_empty(world * rows, hidden)
        all_ids = ids.new_empty(world * rows, k)
        all_weights = weights.new_empty(world * rows, k)
        clock.mark("prepare")
        dist.all_gather_into_tensor(all_x, x_pad, group=self.group)
        dist.all_gather_into_tensor(all_ids, ids_pad, group=self.group)
        dist.all_gather_into_tensor(all_weights, weights_pad, group=self.group)
        clock.mark("dispatch")
        shares = self._experts(all_x, all_ids, all_weights)
        clock.mark("experts")
        y = x.new_empty(rows, hidden)
        dist.reduce_scatter_tensor(y, shares, op=dist.ReduceOp.SUM, group=self.group)
        clock.mark("combine")
        return y[:tokens]

    def _all_to_all(self, x, ids, weights, clock) -> torch.Tensor:
        tokens, hidden = x.shape
        world = self.world_size
        # The rank of each slot's expert, `world` for ids no rank holds: ids
        # clamped to [-1, E] index owner_table, whose last entry (index E,
        # and -1 from the end) is `world`.
        owner = self.owner_table[ids.long().clamp(-1, self.num_experts)]
        needs = torch.zeros(tokens, world + 1, dtype=torch.bool, device=x.device)
        needs.scatter_(1, owner, True)
        needs = needs[:, :world]
        counts = torch.empty(2, world, dtype=torch.int64, device=x.device)
        torch.sum(needs, 0, out=counts[0])
        dist.all_to_all_single(counts[1], counts[0], group=self.group)
        send, recv = counts.tolist()
        self.last_exchange = {"sent": send, "received": recv}
        # (rank, token) pairs in rank then token order; their number is known
        # now, so nonzero needs no second host synchronisation (torch >= 2.6;
        # see _nonzero).
        pairs = _nonzero(needs.t(), sum(send))
        token = pairs[:, 1]
        # A token's slots of other ranks go too: the receiver's expert map
        # drops them, as it drops ids no rank holds.
        recv_x = x.new_empty(sum(recv), hidden)
        recv_ids = ids.new_empty(sum(recv), ids.shape[1])
        recv_weights = weights.new_empty(sum(recv), weights.shape[1])
        clock.mark("prepare")
        for out, inp in ((recv_x, x[token]), (recv_ids, ids[token]),
                         (recv_weights, weights[token])):
            dist.all_to_all_single(out, inp, output_split_sizes=recv, input_split_sizes=send,
                                   group=self.group)
        clock.mark("dispatch")
        shares = self._experts(recv_x, recv_ids, recv_weights)
        clock.mark("experts")
        back = x.new_empty(sum(send), hidden)
        dist.all_to_all_single(back, shares, output_split_sizes=send, input_split_sizes=recv,
                               group=self.group)
        # In rank order, each token at most once per rank: the same sums,
        # bit for bit, on every run.
        back = back.float()
        total = torch.zeros(tokens, hidden, dtype=torch.float32, device=x.device)
        begin = 0
        for count in send:
            total.index_add_(0, token[begin:begin + count], back[begin:begin + count])
            begin += count
        y = total.to(x.dtype)
        clock.mark("combine")
        return y


def _nonzero(mask: torch.Tensor, count: int) -> torch.Tensor:
    """mask.nonzero() when `count` is its number of true entries, without
    the host synchronisation nonzero() costs on CUDA (torch >= 2.6 has
    nonzero_static there)."""
    if count == 0:  # (nonzero_static of an empty mask failed on CUDA before torch 2.9)
        return torch.zeros(0, mask.dim(), dtype=torch.int64, device=mask.device)
    if mask.device.type != "cuda" or _TORCH_VERSION >= (2, 6):
        return torch.nonzero_static(mask, size=count)
    return mask.nonzero()


_TORCH_VERSION = tuple(int(p) for p in torch.__version__.split(".")[:2])


class _Marks:
    """Appends (stage, marker) to a caller's list: a recorded CUDA event on
    CUDA tensors, a perf_counter reading on the CPU. Does nothing without a
    list."""

    def __init__(self, stages: Optional[list], device: torch.device):
        self.stages = stages
        self.cuda = device.type == "cuda"
        self.mark("start")

    def mark(self, name: str) -> None:
        if self.stages is None:
            return
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.stages.append((name, event))
        else:
            self.stages.append((name, time.perf_counter()))


def stage_times(stages: list) -> dict:
    """Milliseconds per stage from a `stages` list forward filled (after
    torch.cuda.synchronize() on CUDA): {"prepare": ..., "dispatch": ...,
    "experts": ..., "combine": ..., "total": ...}; all_gather's size
    exchange counts as "prepare"."""
    times = {}
    for (_, before), (name, after) in zip(stages, stages[1:]):
        if isinstance(before, float):
            ms = (after - before) * 1e3
        else:
            ms = before.elapsed_time(after)
        times[name] = times.get(name, 0.0) + ms
    times["total"] = sum(times.values())
    return times


__all__ = ["ExpertParallel", "MODES", "expert_owners", "expert_ranges", "local_expert_map",
           "shard_experts", "stage_times"]
