"""moejit as an experts implementation of Hugging Face Transformers 5.x.

    import moejit.transformers  # registers "moejit"
    model = AutoModelForCausalLM.from_pretrained(name, experts_implementation="moejit")
    # or, on a loaded model: model.set_experts_implementation("moejit")

Transformers routes every MoE experts module decorated with
`use_experts_implementation` (Qwen3-MoE, Qwen2-MoE, Mixtral, OLMoE, ...)
through the function registered under the name in its config. Ours calls
`torch.ops.moejit.fused_experts` where the layer is what moejit computes
(gate and up concatenated in [E, 2I, H], down in [E, H, I], SiLU gating, no
biases) and no gradient is needed; anything else runs Transformers' own
eager experts, with one warning per model class and reason.

Expert parallelism: Transformers marks tokens routed to another rank's
experts with the id num_experts; moejit's kernels skip ids outside
[0, num_experts) without reading them, so no expert map is needed.
"""

import logging
from typing import Optional

import torch
from transformers.activations import SiLUActivation
from transformers.integrations.moe import ExpertsInterface, _default_apply_gate

from ._capi import MoejitError
from .torch import _DTYPES, _checked_shape, check_arguments, fused_experts

NAME = "moejit"

logger = logging.getLogger("moejit.transformers")
_warned = set()


def unfit_reason(module: torch.nn.Module, hidden_states: torch.Tensor,
                 top_k_index: Optional[torch.Tensor] = None,
                 top_k_weights: Optional[torch.Tensor] = None) -> Optional[str]:
    """Why moejit cannot run this experts module on this input, or None.
    With the call's routing as the op gets it (contiguous, the weights
    float32 or the activations' dtype), the op's own argument checks too."""
    if getattr(module, "has_bias", False):
        return "its experts have biases"
    if not getattr(module, "has_gate", True):
        return "its experts have no gate projection"
    if getattr(module, "is_transposed", False):
        return "its expert weights are stored transposed"
    if not getattr(module, "is_concatenated", True):
        return "its gate and up projections are interleaved"
    if type(module)._apply_gate is not _default_apply_gate:
        return "it gates with its own function"
    if not isinstance(getattr(module, "act_fn", None), (SiLUActivation, torch.nn.SiLU)):
        return f"its activation is {type(getattr(module, 'act_fn', None)).__name__}, not SiLU"
    if hidden_states.dtype not in _DTYPES:
        return f"its activations are {hidden_states.dtype}"
    if hidden_states.device.type not in ("cuda", "cpu"):
        return f"it runs on {hidden_states.device}"
    # (The op refuses strided weights rather than copy them on every call;
    # the eager experts read them as they are.)
    for name in ("gate_up_proj", "down_proj"):
        weight = getattr(module, name)
        if not weight.is_contiguous():
            return f"its {name} is not contiguous (strides {tuple(weight.stride())})"
    # Every input of the op that autograd could differentiate: the routing
    # weights need a gradient when the router trains, down_proj alone when
    # only it trains.
    if torch.is_grad_enabled() and any(
            t is not None and t.requires_grad
            for t in (hidden_states, top_k_weights, module.gate_up_proj, module.down_proj)):
        return ("gradients are needed (moejit has no backward; run inference under "
                "torch.no_grad() or torch.inference_mode())")
    if top_k_index is not None and top_k_weights is not None:
        # The op's checks, its shape rules included, asked here: under
        # torch.compile they run at trace time, where a refusal can still
        # choose the eager experts (the graph's run could only raise).
        # Eager calls use the op's cache of checked signatures.
        check = check_arguments if torch.compiler.is_compiling() else _checked_shape
        try:
            check(hidden_states, module.gate_up_proj, module.down_proj, top_k_index,
                  top_k_weights, None)
        except (TypeError, ValueError) as e:
            return f"its arguments do not fit moejit: {str(e).replace('moejit: ', '', 1)}"
    return None


# Under torch.compile this runs once, at trace time, where the fallback is
# decided, and its result is a constant of the graph: a logging call traced
# by Dynamo would break the graph (an error under fullgraph=True).
@torch.compiler.assume_constant_result
def _warn_once(module_class: str, reason: str) -> bool:
    if (module_class, reason) in _warned:
        return False
    _warned.add((module_class, reason))
    logger.warning("moejit: %s runs Transformers' eager experts because %s", module_class,
                   reason)
    return True


def _fall_back(module, reason, hidden_states, top_k_index, top_k_weights):
    _warn_once(type(module).__name__, reason)
    # The class's own forward, which use_experts_implementation wrapped.
    eager = type(module).forward.__wrapped__
    return eager(module, hidden_states, top_k_index, top_k_weights)


def experts_forward(module: torch.nn.Module, hidden_states: torch.Tensor,
                    top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> torch.Tensor:
    """The experts forward Transformers calls for experts_implementation="moejit"."""
    x, ids, weights = hidden_states.contiguous(), top_k_index.contiguous(), top_k_weights
    if weights.dtype not in (torch.float32, x.dtype):
        weights = weights.float()
    weights = weights.contiguous()
    reason = unfit_reason(module, x, ids, weights)
    if reason is not None:
        return _fall_back(module, reason, hidden_states, top_k_index, top_k_weights)
    try:
        return fused_experts(x, module.gate_up_proj, module.down_proj, ids, weights)
    except MoejitError as e:
        if e.status != "INVALID_SHAPE":
            raise
        return _fall_back(module, f"moejit has no kernels for its shape ({e.message})",
                          hidden_states, top_k_index, top_k_weights)


def register(name: str = NAME) -> None:
    """Registers the backend under `name` for every model of this process."""
    ExpertsInterface.register(name, experts_forward)


register()

__all__ = ["NAME", "experts_forward", "register", "unfit_reason"]
