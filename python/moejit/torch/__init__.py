"""The fused MoE experts as a PyTorch op.

    import moejit.torch
    y = moejit.torch.fused_experts(x, gate_up_proj, down_proj, top_k_index, top_k_weights)

`torch.ops.moejit.fused_experts` (returns y) and
`torch.ops.moejit.fused_experts_` (writes y into x, SGLang's in-place mode)
are `torch.library.custom_op`s with fake implementations, so
`torch.compile(fullgraph=True)` traces them. On CUDA tensors they run
moejit's kernels on torch's current stream with a workspace from torch's
caching allocator, and can be captured in a CUDA graph once the kernel set
of the shape is bound (`prepare`, or one eager call before capturing). On
CPU tensors they run a plain PyTorch reference (`moejit.torch.reference`),
which is slow and meant for tests and hosts without a GPU.

Layouts are those of moejit::MoeArgs: x [T, H]; gate_up_proj [E, 2I, H]
(rows [0, I) gate, [I, 2I) up, as Transformers and vLLM store them);
down_proj [E, H, I]; top_k_index [T, k] int32 or int64; top_k_weights
[T, k] float32 or x's dtype; expert_map None or int32 [E_global] mapping a
global expert id to a local one or -1 (expert parallelism: ids outside the
map or mapped to -1 contribute nothing). Every tensor contiguous, on one
device.
"""

import threading
from typing import Dict, Optional

import torch

from .. import _capi
from .._capi import MoejitError, Shape

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
_INDEX_TYPES = {torch.int32: _capi.INDEX_TYPES["int32"], torch.int64: _capi.INDEX_TYPES["int64"]}


# moejit's shape rules (src/workload/shape.cpp; include/moejit/moejit.hpp's
# kMaxExperts, kMaxK, kMaxDim), checked here as well: the CPU reference and
# the fake implementation (meta tensors, torch.compile's trace) then refuse
# what the kernels would, instead of the first GPU run of a compiled graph.
# k may exceed the experts: an expert-parallel rank can hold fewer experts
# than a token's k.
_MAX_EXPERTS = 4096
_MAX_K = 4096
_MAX_DIM = 65536


def _describe(t: torch.Tensor) -> str:
    return f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')} on {t.device}"


def check_arguments(x: torch.Tensor, gate_up_proj: torch.Tensor, down_proj: torch.Tensor,
                    top_k_index: torch.Tensor, top_k_weights: torch.Tensor,
                    expert_map: Optional[torch.Tensor]) -> Shape:
    """The moejit shape of one call, or a ValueError / TypeError naming the
    argument that does not fit. Reads only metadata (fake tensors too)."""
    return _check_arguments(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map,
                            no_experts_ok=False)


def _check_arguments(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map,
                     no_experts_ok: bool) -> Shape:
    """check_arguments; `no_experts_ok` lets weights of no experts pass (an
    expert-parallel rank that holds none, and runs no op)."""
    if x.dtype not in _DTYPES:
        raise TypeError(f"moejit: x is {_describe(x)}; it must be bfloat16, float16 or float32")
    if x.dim() != 2:
        raise ValueError(f"moejit: x is {_describe(x)}; it must be [tokens, hidden]")
    tokens, hidden = x.shape
    if gate_up_proj.dim() != 3 or down_proj.dim() != 3:
        raise ValueError(f"moejit: gate_up_proj is {_describe(gate_up_proj)} and down_proj "
                         f"{_describe(down_proj)}; they must be [E, 2I, H] and [E, H, I]")
    experts, intermediate = down_proj.shape[0], down_proj.shape[2]
    if tuple(gate_up_proj.shape) != (experts, 2 * intermediate, hidden) or \
            tuple(down_proj.shape) != (experts, hidden, intermediate):
        raise ValueError(
            f"moejit: with x {_describe(x)}, gate_up_proj {_describe(gate_up_proj)} and "
            f"down_proj {_describe(down_proj)} do not fit [E, 2I, H] and [E, H, I] "
            f"(transposed weights are not supported)")
    for name, w in (("gate_up_proj", gate_up_proj), ("down_proj", down_proj)):
        if w.dtype != x.dtype:
            raise TypeError(f"moejit: {name} is {_describe(w)}; it must have x's dtype {x.dtype}")
    if top_k_index.dtype not in _INDEX_TYPES:
        raise TypeError(f"moejit: top_k_index is {_describe(top_k_index)}; it must be int32 "
                        f"or int64")
    if top_k_index.dim() != 2 or top_k_index.shape[0] != tokens:
        raise ValueError(f"moejit: top_k_index is {_describe(top_k_index)}; with x "
                         f"{_describe(x)} it must be [{tokens}, k]")
    if tuple(top_k_weights.shape) != tuple(top_k_index.shape):
        raise ValueError(f"moejit: top_k_weights is {_describe(top_k_weights)}; it must have "
                         f"top_k_index's shape {tuple(top_k_index.shape)}")
    if top_k_weights.dtype not in (torch.float32, x.dtype):
        raise TypeError(f"moejit: top_k_weights is {_describe(top_k_weights)}; it must be "
                        f"float32 or x's dtype {x.dtype}")
    # (These texts name no token count: moejit.transformers warns once per
    # text and model class.)
    k = top_k_index.shape[1]
    if not (0 if no_experts_ok else 1) <= experts <= _MAX_EXPERTS:
        raise ValueError(f"moejit: experts = {experts} must be in 1..{_MAX_EXPERTS} (the first "
                         f"dimension of gate_up_proj and down_proj)")
    if not 1 <= k <= _MAX_K:
        raise ValueError(f"moejit: k = {k} must be in 1..{_MAX_K} (the second dimension of "
                         f"top_k_index and top_k_weights)")
    for name, value, where in (("hidden", hidden, "x's second dimension"),
                               ("intermediate", intermediate, "down_proj's third dimension")):
        if value < 8 or value % 8 != 0 or value > _MAX_DIM:
            raise ValueError(f"moejit: {name} = {value} must be a multiple of 8 in "
                             f"[8, {_MAX_DIM}] ({where})")
    tensors = [("x", x), ("gate_up_proj", gate_up_proj), ("down_proj", down_proj),
               ("top_k_index", top_k_index), ("top_k_weights", top_k_weights)]
    if expert_map is not None:
        if expert_map.dtype != torch.int32 or expert_map.dim() != 1:
            raise TypeError(f"moejit: expert_map is {_describe(expert_map)}; it must be int32 "
                            f"[global experts]")
        # (An empty tensor's data_ptr() is 0 on CUDA: moejit would read
        # "no map" and take the ids as local.)
        if expert_map.shape[0] == 0:
            raise ValueError("moejit: expert_map is empty; it must map at least one global "
                             "expert (pass None for no map)")
        tensors.append(("expert_map", expert_map))
    for name, t in tensors:
        if t.device != x.device:
            raise ValueError(f"moejit: {name} is {_describe(t)}; every tensor must be on "
                             f"x's device {x.device}")
        if not t.is_contiguous():
            raise ValueError(f"moejit: {name} {_describe(t)} is not contiguous "
                             f"(strides {t.stride()})")
    if x.device.type not in ("cuda", "cpu", "meta"):
        raise ValueError(f"moejit: tensors are on {x.device}; moejit runs on CUDA devices "
                         f"(and its reference on the CPU)")
    return Shape(int(top_k_index.shape[1]), int(hidden), int(intermediate), int(experts),
                 _DTYPES[x.dtype])


def _signature(t: Optional[torch.Tensor]):
    return None if t is None else (t.shape, t.dtype, t.device, t.is_contiguous())


# check_arguments' answers by the metadata it reads: an eager decode loop
# repeats one signature, and looking it up costs a third of checking it.
_checked: Dict[tuple, Shape] = {}


def _checked_shape(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map,
                   no_experts_ok: bool = False) -> Shape:
    key = (_signature(x), _signature(gate_up_proj), _signature(down_proj),
           _signature(top_k_index), _signature(top_k_weights), _signature(expert_map),
           no_experts_ok)
    shape = _checked.get(key)
    if shape is None:
        shape = _check_arguments(x, gate_up_proj, down_proj, top_k_index, top_k_weights,
                                 expert_map, no_experts_ok)
        if len(_checked) >= 4096:
            _checked.clear()
        _checked[key] = shape
    return shape


def reference(x: torch.Tensor, gate_up_proj: torch.Tensor, down_proj: torch.Tensor,
              top_k_index: torch.Tensor, top_k_weights: torch.Tensor,
              expert_map: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The operation in plain PyTorch, fp32 accumulation, h rounded to x's
    dtype between the GEMMs as moejit's kernels store it."""
    experts = gate_up_proj.shape[0]
    intermediate = down_proj.shape[2]
    ids = top_k_index.long()
    if expert_map is not None:
        inside = (ids >= 0) & (ids < expert_map.shape[0])
        ids = torch.where(inside, expert_map.long()[ids.clamp(0, max(expert_map.shape[0] - 1, 0))],
                          torch.full_like(ids, -1))
    y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for e in torch.unique(ids).tolist():
        if e < 0 or e >= experts:
            continue
        token, slot = torch.where(ids == e)
        rows = x[token].float()
        gate_up = rows @ gate_up_proj[e].float().t()
        h = torch.nn.functional.silu(gate_up[:, :intermediate]) * gate_up[:, intermediate:]
        out = h.to(x.dtype).float() @ down_proj[e].float().t()
        y.index_add_(0, token, out * top_k_weights[token, slot].float()[:, None])
    return y.to(x.dtype)


class _Device:
    """One moejit runtime per CUDA device, and its kernel sets per shape."""

    def __init__(self, index: int):
        self.runtime = _capi.Runtime(index)
        self.kernels: Dict[Shape, _capi.KernelSet] = {}


_devices: Dict[int, _Device] = {}
_lock = threading.Lock()


def _kernel_set_of(index: int, shape: Shape) -> _capi.KernelSet:
    found = _devices.get(index)
    if found is not None:
        kernels = found.kernels.get(shape)
        if kernels is not None:
            return kernels
    # The capture, if any, is on torch's current stream of *this* device,
    # which need not be the current device (tensors on cuda:1, device 0
    # current): a compile or tune there would break the capture.
    with torch.cuda.device(index):
        capturing = torch.cuda.is_current_stream_capturing()
    if capturing:
        raise RuntimeError(
            f"moejit: the kernels of {shape} on cuda:{index} are not bound yet and cannot be "
            f"compiled or tuned during CUDA graph capture; call moejit.torch.prepare() or run "
            f"the op once before capturing")
    with _lock:
        if index not in _devices:
            _devices[index] = _Device(index)
        found = _devices[index]
        if shape not in found.kernels:
            found.kernels[shape] = found.runtime.get(shape)
        return found.kernels[shape]


def prepare(shape: Shape, device: Optional[torch.device] = None) -> None:
    """Binds the kernel set of `shape` on `device` (default: the current
    CUDA device): loads or compiles it now, so that later calls, CUDA graph
    captures included, find it ready."""
    _kernel_set_of(_cuda_index(device), shape)


def _cuda_index(device) -> int:
    """The index of a CUDA device given as prepare() and cache_stats() take
    it (None: the current one); a ValueError for any other device, which
    moejit has no kernels for (it used to mean the current CUDA device)."""
    device = torch.device("cuda") if device is None else torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"moejit: {device} is not a CUDA device; prepare() and cache_stats() "
                         f"are about the kernels of one")
    return device.index if device.index is not None else torch.cuda.current_device()


def _current_stream(index: int) -> int:
    """torch's current stream on device `index`, as the cudaStream_t
    value; the raw query inductor's generated code uses skips building a
    torch.cuda.Stream object per call."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream


def _launch(x: torch.Tensor, gate_up_proj: torch.Tensor, down_proj: torch.Tensor,
            top_k_index: torch.Tensor, top_k_weights: torch.Tensor,
            expert_map: Optional[torch.Tensor], y: torch.Tensor) -> None:
    shape = _checked_shape(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map)
    tokens = x.shape[0]
    if tokens == 0:
        return
    if x.device.type == "cpu":
        y.copy_(reference(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map))
        return
    index = x.get_device()
    kernels = _kernel_set_of(index, shape)
    workspace_bytes = kernels.workspace_bytes(tokens)
    # From torch's caching allocator (the graph's pool while capturing); the
    # stream order keeps it alive until the kernels that use it are done.
    workspace = torch.empty(workspace_bytes, dtype=torch.uint8, device=x.device)
    kernels.run(x.data_ptr(), gate_up_proj.data_ptr(), down_proj.data_ptr(),
                top_k_index.data_ptr(), top_k_weights.data_ptr(), y.data_ptr(), tokens,
                workspace.data_ptr(), workspace_bytes,
                _current_stream(index),
                0 if expert_map is None else expert_map.data_ptr(),
                0 if expert_map is None else expert_map.shape[0],
                _INDEX_TYPES[top_k_index.dtype],
                0 if top_k_weights.dtype == torch.float32 else 1)


@torch.library.custom_op("moejit::fused_experts", mutates_args=())
def _fused_experts(x: torch.Tensor, gate_up_proj: torch.Tensor, down_proj: torch.Tensor,
                   top_k_index: torch.Tensor, top_k_weights: torch.Tensor,
                   expert_map: Optional[torch.Tensor] = None) -> torch.Tensor:
    y = torch.empty_like(x)
    _launch(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map, y)
    return y


@_fused_experts.register_fake
def _fused_experts_fake(x, gate_up_proj, down_proj, top_k_index, top_k_weights,
                        expert_map=None):
    check_arguments(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map)
    return torch.empty_like(x)


@torch.library.custom_op("moejit::fused_experts_", mutates_args=("x",))
def _fused_experts_inplace(x: torch.Tensor, gate_up_proj: torch.Tensor, down_proj: torch.Tensor,
                           top_k_index: torch.Tensor, top_k_weights: torch.Tensor,
                           expert_map: Optional[torch.Tensor] = None) -> None:
    _launch(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map, x)


@_fused_experts_inplace.register_fake
def _fused_experts_inplace_fake(x, gate_up_proj, down_proj, top_k_index, top_k_weights,
                                expert_map=None):
    check_arguments(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map)


def _direct(x: torch.Tensor, weights) -> bool:
    """Whether an eager call may skip torch's dispatcher: plain tensors (not
    fake, meta or traced), outside torch.compile, and no gradient asked for (the
    op has no backward, which the dispatcher reports). The dispatcher adds
    several microseconds per call that decode steps feel."""
    if type(x) is not torch.Tensor or x.is_meta or torch.compiler.is_compiling():
        return False  # (meta tensors: the dispatcher runs the fake implementation)
    # What sees calls through the dispatcher only, on plain tensors too:
    # torch.jit.trace (a skipped op is missing from the graph, its output
    # recorded as a constant), functorch transforms (vmap, grad) and
    # TorchDispatchModes (FLOP counters, make_fx; the C stack's length
    # counts the modes torch pushes itself as well as the Python ones).
    if torch.jit.is_tracing() or torch._C._are_functorch_transforms_active() or \
            torch._C._len_torch_dispatch_stack():
        return False
    return not (torch.is_grad_enabled() and any(w.requires_grad for w in weights))


def fused_experts(x: torch.Tensor, gate_up_proj: torch.Tensor, down_proj: torch.Tensor,
                  top_k_index: torch.Tensor, top_k_weights: torch.Tensor,
                  expert_map: Optional[torch.Tensor] = None,
                  inplace: bool = False) -> torch.Tensor:
    """y = sum over the k slots of weight * down(silu(gate x) * up x);
    with `inplace`, y is written into x and x is returned. Eager calls on
    plain tensors run the op's implementation directly; traced and compiled
    ones, and those under functorch transforms or dispatch modes, go through
    torch.ops.moejit."""
    if _direct(x, (x, gate_up_proj, down_proj, top_k_weights)):
        y = x if inplace else torch.empty_like(x)
        _launch(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map, y)
        if inplace and not x.is_inference():
            # The kernels wrote x through its pointer, which autograd does not
            # see: without the bump, a graph that saved x would backpropagate
            # through the new values silently (the dispatcher's in-place op
            # bumps it and autograd reports the modification). Inference
            # tensors have no version to bump.
            torch.autograd.graph.increment_version(x)
        return y
    if inplace:
        torch.ops.moejit.fused_experts_(x, gate_up_proj, down_proj, top_k_index, top_k_weights,
                                        expert_map)
        return x
    return torch.ops.moejit.fused_experts(x, gate_up_proj, down_proj, top_k_index,
                                          top_k_weights, expert_map)


def cache_stats(device: Optional[torch.device] = None) -> Optional[_capi.CacheStats]:
    """The cache statistics of `device`'s runtime; None before its first call."""
    found = _devices.get(_cuda_index(device))
    return None if found is None else found.runtime.cache_stats()


__all__ = ["MoejitError", "Shape", "cache_stats", "check_arguments", "fused_experts", "prepare",
           "reference"]
