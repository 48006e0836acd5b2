"""moejit.torch and moejit.transformers. On a machine without a GPU (CI)
the ops run their PyTorch reference, which checks the argument handling,
`torch.library.opcheck`, the `torch.compile(fullgraph=True)` trace and the
Transformers registration; with a GPU the same tests run moejit's kernels,
and the tests marked GPU (CUDA graphs, generate(), bitwise equalities)
run too."""

import ast
import logging
import os
import sys
import unittest
import warnings
from unittest import mock

import torch

import moejit
import moejit.torch as mt

GPU = torch.cuda.is_available()
DEVICE = torch.device("cuda" if GPU else "cpu")
needs_gpu = unittest.skipUnless(GPU, "needs a CUDA GPU (runs on the H200 in gpu_check.sh)")


def make_inputs(tokens=37, hidden=256, intermediate=128, experts=16, k=4, dtype=torch.bfloat16,
                device=DEVICE, seed=0):
    """Random inputs scaled so y is O(1): x ~ N(0,1), weights ~ N(0, 1/fan_in)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=g)
    gate_up = torch.randn(experts, 2 * intermediate, hidden, generator=g) / hidden ** 0.5
    down = torch.randn(experts, hidden, intermediate, generator=g) / intermediate ** 0.5
    ids = torch.argsort(torch.rand(tokens, experts, generator=g), dim=1)[:, :k]
    weights = torch.softmax(torch.randn(tokens, k, generator=g), dim=-1)
    return (x.to(device, dtype), gate_up.to(device, dtype), down.to(device, dtype),
            ids.to(device, torch.int32), weights.to(device))


def loop_reference(x, gate_up, down, ids, weights):
    """Token by token in fp64, independent of moejit.torch.reference."""
    intermediate = down.shape[2]
    y = torch.zeros(x.shape, dtype=torch.float64)
    x, gate_up, down = x.double().cpu(), gate_up.double().cpu(), down.double().cpu()
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            if not 0 <= e < gate_up.shape[0]:
                continue
            g = gate_up[e] @ x[t]
            h = torch.nn.functional.silu(g[:intermediate]) * g[intermediate:]
            y[t] += float(weights[t, j]) * (down[e] @ h)
    return y


def rel_error(a, b):
    return float((a.double().cpu() - b.double().cpu()).norm() / b.double().cpu().norm())


class Op(unittest.TestCase):
    def test_matches_an_independent_fp64_loop(self):
        for dtype, tolerance in ((torch.float32, 1e-5), (torch.bfloat16, 1.5e-2)):
            args = make_inputs(dtype=dtype)
            self.assertLess(rel_error(mt.fused_experts(*args), loop_reference(*args)), tolerance)

    def test_arguments_that_do_not_fit_are_refused_before_launch(self):
        x, gate_up, down, ids, weights = make_inputs()
        cases = [
            ((x.half(), gate_up, down, ids, weights), TypeError, "x's dtype"),
            ((x.to(torch.int8), gate_up, down, ids, weights), TypeError, "bfloat16, float16"),
            ((x[:, :128], gate_up, down, ids, weights), ValueError, "[E, 2I, H]"),
            ((x, gate_up, down.transpose(1, 2).contiguous(), ids, weights), ValueError,
             "transposed"),
            ((x, gate_up, down, ids.to(torch.int16), weights), TypeError, "int32 or int64"),
            ((x, gate_up, down, ids[:5], weights), ValueError, "top_k_index"),
            ((x, gate_up, down, ids, weights[:, :2]), ValueError, "top_k_weights"),
            ((x, gate_up, down, ids, weights.half()), TypeError, "float32 or x's dtype"),
            ((x.t().contiguous().t(), gate_up, down, ids, weights), ValueError, "contiguous"),
            ((x, gate_up, down, ids, weights, torch.zeros(16, dtype=torch.int64,
                                                          device=DEVICE)), TypeError, "int32"),
            ((x, gate_up, down, ids.to("meta"), weights), ValueError, "x's device"),
            ((x, gate_up, down, ids, weights, torch.zeros(0, dtype=torch.int32,
                                                          device=DEVICE)), ValueError, "empty"),
        ]
        for args, error, text in cases:
            with self.subTest(text=text):
                with self.assertRaises(error) as raised:
                    mt.fused_experts(*args)
                self.assertIn(text, str(raised.exception))

    def test_shapes_outside_moejits_rules_are_refused_on_every_device(self):
        """The C library's shape rules (experts and k in 1..4096, hidden and
        intermediate multiples of 8 in [8, 65536]) refuse a shape on the CPU
        and on meta tensors (the fake implementation torch.compile traces)
        as the GPU does, naming the field. k may exceed the experts (an
        expert-parallel rank can hold fewer)."""
        def inputs(device, tokens=3, hidden=64, intermediate=32, experts=4, k=2):
            return (torch.empty(tokens, hidden, device=device),
                    torch.empty(experts, 2 * intermediate, hidden, device=device),
                    torch.empty(experts, hidden, intermediate, device=device),
                    torch.zeros(tokens, k, dtype=torch.int32, device=device),
                    torch.empty(tokens, k, device=device))

        cases = [dict(hidden=20), dict(hidden=0), dict(hidden=65544), dict(intermediate=12),
                 dict(intermediate=65544), dict(experts=0), dict(experts=4097), dict(k=0),
                 dict(k=4097)]
        for case in cases:
            (field, value), = case.items()
            with self.subTest(**case):
                with self.assertRaisesRegex(ValueError, f"^moejit: {field} = {value} must"):
                    mt.check_arguments(*inputs("meta", **case), None)
                with self.assertRaisesRegex(ValueError, f"{field} = {value}"):
                    mt.fused_experts(*inputs("meta", **case))
                if max(case.values()) < 4096:  # (small enough to allocate)
                    with self.assertRaisesRegex(ValueError, f"{field} = {value}"):
                        mt.fused_experts(*inputs(DEVICE, **case))
        for fits in (dict(hidden=65536, intermediate=65536, experts=4096, k=4096),
                     dict(experts=1, k=2)):
            with self.subTest(**fits):
                shape = mt.check_arguments(*inputs("meta", **fits), None)
                self.assertEqual((shape.k, shape.experts), (fits["k"], fits["experts"]))

    def test_prepare_and_cache_stats_take_only_cuda_devices(self):
        shape = mt.Shape(2, 256, 128, 8, "bf16")
        for call in (lambda: mt.prepare(shape, "cpu"), lambda: mt.cache_stats("meta"),
                     lambda: mt.cache_stats(torch.device("cpu"))):
            with self.assertRaises(ValueError) as raised:
                call()
            self.assertIn("is not a CUDA device", str(raised.exception))

    def test_meta_tensors_give_the_output_shape(self):
        # Eager meta calls go through the dispatcher to the fake
        # implementation: no device, no launch.
        meta = [t.to("meta") for t in make_inputs(tokens=9)]
        for inplace in (False, True):
            y = mt.fused_experts(*meta, inplace=inplace)
            self.assertTrue(y.is_meta)
            self.assertEqual(tuple(y.shape), (9, 256))
        with self.assertRaises(ValueError):
            mt.fused_experts(*meta[:4], meta[4][:, :2])

    def test_no_tokens_is_a_no_op(self):
        x, gate_up, down, ids, weights = make_inputs(tokens=0)
        self.assertEqual(mt.fused_experts(x, gate_up, down, ids, weights).shape, (0, 256))

    def test_opcheck(self):
        args = make_inputs(tokens=9)
        torch.library.opcheck(torch.ops.moejit.fused_experts.default, args + (None,))
        x, *rest = args
        torch.library.opcheck(torch.ops.moejit.fused_experts_.default, (x.clone(), *rest, None))

    def test_compile_fullgraph_gives_the_eager_result_bitwise(self):
        args = make_inputs(tokens=33)
        eager = mt.fused_experts(*args)
        compiled = torch.compile(lambda *a: mt.fused_experts(*a) * 2, fullgraph=True)
        self.assertTrue(torch.equal(compiled(*args), eager * 2))
        inplace = torch.compile(lambda x, *a: mt.fused_experts(x, *a, inplace=True) + 1,
                                fullgraph=True)
        x, *rest = args
        self.assertTrue(torch.equal(inplace(x.clone(), *rest), eager + 1))

    def test_int64_ids_model_dtype_weights_and_in_place_match(self):
        x, gate_up, down, ids, weights = make_inputs()
        plain = mt.fused_experts(x, gate_up, down, ids, weights)
        self.assertTrue(torch.equal(mt.fused_experts(x, gate_up, down, ids.long(), weights),
                                    plain))
        in_model_dtype = mt.fused_experts(x, gate_up, down, ids, weights.to(x.dtype))
        self.assertTrue(torch.equal(
            in_model_dtype,
            mt.fused_experts(x, gate_up, down, ids, weights.to(x.dtype).float())))
        same = x.clone()
        self.assertIs(mt.fused_experts(same, gate_up, down, ids, weights, inplace=True), same)
        self.assertTrue(torch.equal(same, plain))

    def test_in_place_calls_bump_the_version_of_x(self):
        """The kernels write x through its pointer, which autograd does not
        see; the call bumps x's version, so a graph that saved x refuses to
        backpropagate through the new values, as after the dispatcher's
        in-place op. `raw` writes as the CUDA launch does, on any device."""
        x, gate_up, down, ids, weights = make_inputs(dtype=torch.float32)

        def raw(x, gate_up_proj, down_proj, top_k_index, top_k_weights, expert_map, y):
            # (.data: the same memory under a version of its own)
            y.data.copy_(mt.reference(x, gate_up_proj, down_proj, top_k_index, top_k_weights,
                                      expert_map))

        for launch in (None, raw):
            with self.subTest(launch="raw" if launch else "op"):
                same = x.clone()
                scale = torch.ones_like(same, requires_grad=True)
                saved = (scale * same).sum()  # keeps x for its backward
                before = same._version
                with mock.patch.object(mt, "_launch", launch or mt._launch):
                    mt.fused_experts(same, gate_up, down, ids, weights, inplace=True)
                self.assertGreater(same._version, before)
                with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
                    saved.backward()

    def test_tracing_transforms_and_dispatch_modes_see_the_op(self):
        """Only plain eager calls skip the dispatcher: a TorchDispatchMode
        sees the op, torch.jit.trace records it (not its output as a
        constant) and vmap runs it slice by slice."""
        from torch.utils._python_dispatch import TorchDispatchMode
        x, gate_up, down, ids, weights = make_inputs(tokens=6, dtype=torch.float32)

        class Seen(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.ops = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.ops.append(str(func))
                return func(*args, **(kwargs or {}))

        for inplace, name in ((False, "moejit.fused_experts.default"),
                              (True, "moejit.fused_experts_.default")):
            same = x.clone()
            with Seen() as seen:
                mt.fused_experts(same, gate_up, down, ids, weights, inplace=inplace)
            self.assertIn(name, seen.ops)

        def call(x, ids, weights):
            return mt.fused_experts(x, gate_up, down, ids, weights)

        other = (ids + 5) % gate_up.shape[0]  # other experts than the example's
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (trace's and vmap's advice)
            traced = torch.jit.trace(call, (x, ids, weights))
            self.assertTrue(torch.equal(traced(x, other, weights), call(x, other, weights)))
            batch = torch.stack([x, x.flip(0)])
            mapped = torch.vmap(lambda rows: call(rows, ids, weights))(batch)
        for i in range(2):
            self.assertTrue(torch.equal(mapped[i], call(batch[i], ids, weights)))

    def test_an_expert_map_splitting_the_experts_sums_to_the_full_run(self):
        x, gate_up, down, ids, weights = make_inputs(dtype=torch.float32, experts=16)
        full = mt.fused_experts(x, gate_up, down, ids, weights)
        parts = []
        for first in (0, 8):
            local = torch.full((16,), -1, dtype=torch.int32)
            local[first:first + 8] = torch.arange(8, dtype=torch.int32)
            parts.append(mt.fused_experts(x, gate_up[first:first + 8].contiguous(),
                                          down[first:first + 8].contiguous(), ids, weights,
                                          expert_map=local.to(DEVICE)))
        self.assertLess(rel_error(parts[0] + parts[1], full), 1e-5)
        self.assertGreater(rel_error(parts[0], full), 0.1, "each part is only a part")

    def test_ids_outside_the_experts_contribute_nothing(self):
        x, gate_up, down, ids, weights = make_inputs(dtype=torch.float32)
        sentinel = ids.clone()
        sentinel[::3, 0] = 16  # Transformers' "on another rank" id
        expected = loop_reference(x, gate_up, down, sentinel, weights)
        self.assertLess(rel_error(mt.fused_experts(x, gate_up, down, sentinel, weights),
                                  expected), 1e-5)


class WheelNvrtc(unittest.TestCase):
    def test_the_cuda_wheels_nvrtc_is_the_one_moejit_compiles_with(self):
        """In a process without torch (torch itself loads the wheel's NVRTC
        at import, which moejit would find anyway), moejit's first compile
        uses the NVRTC of the CUDA wheels, not /usr/local/cuda's."""
        import glob
        import subprocess
        from moejit import _build_info
        name = f"libnvrtc.so.{_build_info.NVRTC_MAJOR}"
        wheel = {os.path.realpath(p) for folder in sys.path
                 for p in glob.glob(os.path.join(folder or ".", "nvidia", "*", "lib", name))}
        if not wheel or os.environ.get("MOEJIT_NVRTC_LIBRARY"):
            self.skipTest("no CUDA wheel NVRTC in this environment, or MOEJIT_NVRTC_LIBRARY set")
        code = f"""
import os, sys, tempfile, moejit
with tempfile.TemporaryDirectory() as root:
    moejit.warm([moejit.Shape(k=2, hidden=64, intermediate=32, experts=4)], "sm_80",
                cache_dir=root)
assert "torch" not in sys.modules
with open("/proc/self/maps") as maps:
    print(sorted({{os.path.realpath(l.split()[-1]) for l in maps if "{name}" in l}}))
"""
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        loaded = set(ast.literal_eval(out))  # a printed list of paths
        self.assertTrue(loaded & wheel, f"moejit loaded {loaded}, not one of {wheel}")


@needs_gpu
class Gpu(unittest.TestCase):
    def test_cuda_graph_replay_gives_the_eager_result_bitwise(self):
        args = make_inputs(tokens=64)
        eager = mt.fused_experts(*args)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            mt.fused_experts(*args)  # binds nothing new: already prepared
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = mt.fused_experts(*args)
        graph.replay()
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(captured, eager))
        args[0].copy_(torch.randn_like(args[0]))
        graph.replay()
        self.assertTrue(torch.equal(captured, mt.fused_experts(*args)))

    def test_capture_of_an_unprepared_shape_is_a_clear_error(self):
        args = make_inputs(tokens=16, hidden=512, intermediate=64, experts=8, k=2)
        graph = torch.cuda.CUDAGraph()
        with self.assertRaises(RuntimeError) as raised:
            with torch.cuda.graph(graph):
                mt.fused_experts(*args)
        self.assertIn("prepare()", str(raised.exception))
        mt.prepare(mt.check_arguments(*args, None))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = mt.fused_experts(*args)
        graph.replay()
        self.assertTrue(torch.equal(y, mt.fused_experts(*args)))

    def test_runs_on_the_current_stream(self):
        args = make_inputs(tokens=128)
        expected = mt.fused_experts(*args)
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            torch.cuda._sleep(50_000_000)  # the result is only ready after this
            y = mt.fused_experts(*args)
        stream.synchronize()
        self.assertTrue(torch.equal(y, expected))


def tiny_config(family, dtype):
    """A small model of `family` with random weights and no download."""
    import transformers
    common = dict(vocab_size=256, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256, initializer_range=0.5,
                  dtype=dtype, tie_word_embeddings=False)
    if family == "qwen3_moe":
        return transformers.Qwen3MoeConfig(**common, head_dim=32, intermediate_size=256,
                                           moe_intermediate_size=64, num_experts=16,
                                           num_experts_per_tok=4, norm_topk_prob=True)
    if family == "qwen2_moe":
        return transformers.Qwen2MoeConfig(**common, intermediate_size=256,
                                           moe_intermediate_size=64,
                                           shared_expert_intermediate_size=128, num_experts=16,
                                           num_experts_per_tok=4)
    if family == "mixtral":
        return transformers.MixtralConfig(**common, intermediate_size=64, num_local_experts=8,
                                          num_experts_per_tok=2)
    if family == "olmoe":
        return transformers.OlmoeConfig(**common, intermediate_size=64, num_experts=16,
                                        num_experts_per_tok=4)
    raise ValueError(family)


FAMILIES = ("qwen3_moe", "qwen2_moe", "mixtral", "olmoe")


def tiny_model(family, dtype):
    import transformers
    torch.manual_seed(1)
    model = transformers.AutoModelForCausalLM.from_config(tiny_config(family, dtype),
                                                          experts_implementation="eager")
    with torch.no_grad():  # weights large enough that the experts shape the logits
        for name, p in model.named_parameters():
            if "experts" in name:
                p.normal_(0, p.shape[-1] ** -0.5)
    return model.to(DEVICE).eval()


def model_with_an_unfit_layer():
    """A tiny qwen3_moe model whose first MoE layer has experts of
    intermediate size 60, which moejit's shape rules refuse (not a
    multiple of 8)."""
    model = tiny_model("qwen3_moe", torch.float32)
    experts = model.model.layers[0].mlp.experts
    with torch.no_grad():
        experts.gate_up_proj = torch.nn.Parameter(torch.cat(
            [experts.gate_up_proj[:, :60], experts.gate_up_proj[:, 64:124]], dim=1))
        experts.down_proj = torch.nn.Parameter(experts.down_proj[:, :, :60].contiguous())
    return model


def eager_and_moejit_logits(model, tokens):
    """The model's logits with its eager experts, then with moejit's; no
    gradients."""
    with torch.no_grad():
        eager = model(tokens).logits
        model.set_experts_implementation("moejit")
        return eager, model(tokens).logits


class Transformers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import moejit.transformers  # noqa: F401 (registers "moejit")

    def test_every_family_selects_moejit_by_name(self):
        from unittest import mock
        import moejit.transformers as backend
        for family in FAMILIES:
            with self.subTest(family=family):
                model = tiny_model(family, torch.float32)
                experts = model.model.layers[0].mlp.experts
                seen = []
                experts.register_forward_hook(lambda m, args, out: seen.append((args, out)))
                tokens = torch.randint(0, 256, (2, 12), device=DEVICE)
                with mock.patch.object(backend, "fused_experts",
                                       wraps=backend.fused_experts) as op:
                    eager, ours = eager_and_moejit_logits(model, tokens)
                self.assertEqual(op.call_count, 2, "both MoE layers run through moejit")
                self.assertLess(rel_error(ours, eager), 1e-4)
                (args, out), = seen[1:]
                with torch.no_grad():
                    own = type(experts).forward.__wrapped__(experts, *args)
                self.assertLess(rel_error(out, own), 1e-5)
                self.assertGreater(float(out.norm()), 0.1 * float(args[0].norm()),
                                   "the experts' output is not negligible")

    def test_layers_that_do_not_fit_fall_back_with_a_message(self):
        model = tiny_model("qwen3_moe", torch.float32)
        model.set_experts_implementation("moejit")
        tokens = torch.randint(0, 256, (1, 5), device=DEVICE)
        with self.assertLogs("moejit.transformers", logging.WARNING) as logs:
            with torch.enable_grad():
                model(tokens).logits.sum().backward()  # needs gradients: eager
        self.assertIn("gradients are needed", logs.output[0])
        experts = model.model.layers[0].mlp.experts
        experts.has_bias = True
        import moejit.transformers as backend
        self.assertEqual(backend.unfit_reason(experts, torch.zeros(1, 128, device=DEVICE)),
                         "its experts have biases")
        experts.has_bias = False
        experts.act_fn = torch.nn.GELU()
        self.assertIn("GELU", backend.unfit_reason(experts, torch.zeros(1, 128, device=DEVICE)))

    def test_training_the_router_or_down_proj_alone_falls_back(self):
        """moejit has no backward: a gradient through the routing weights
        (the router trains) or through down_proj alone needs the eager
        experts too."""
        import moejit.transformers as backend
        tokens = torch.randint(0, 256, (1, 5), device=DEVICE)
        for trained in ("mlp.gate.weight", "down_proj"):
            with self.subTest(trained=trained):
                model = tiny_model("qwen3_moe", torch.float32)
                model.set_experts_implementation("moejit")
                for name, p in model.named_parameters():
                    p.requires_grad_(trained in name)
                with torch.enable_grad():
                    model(tokens).logits.sum().backward()
                grads = [p.grad for name, p in model.named_parameters() if trained in name]
                self.assertTrue(grads and all(g is not None for g in grads))
        experts = model.model.layers[0].mlp.experts
        experts.down_proj.requires_grad_(False)
        hidden = torch.zeros(2, 128, device=DEVICE)
        routing = (torch.zeros(2, 4, dtype=torch.int64, device=DEVICE),
                   torch.ones(2, 4, device=DEVICE, requires_grad=True))
        with torch.enable_grad():
            self.assertIn("gradients are needed", backend.unfit_reason(experts, hidden, *routing))
        with torch.no_grad():
            self.assertIsNone(backend.unfit_reason(experts, hidden, *routing))

    def test_non_contiguous_expert_weights_fall_back(self):
        import moejit.transformers as backend
        model = tiny_model("qwen3_moe", torch.float32)
        experts = model.model.layers[0].mlp.experts
        with torch.no_grad():  # the same values, stored [E, I, H] and viewed as [E, H, I]
            experts.down_proj = torch.nn.Parameter(
                experts.down_proj.transpose(1, 2).contiguous().transpose(1, 2))
        tokens = torch.randint(0, 256, (1, 5), device=DEVICE)
        eager, ours = eager_and_moejit_logits(model, tokens)
        self.assertLess(rel_error(ours, eager), 1e-4)
        self.assertIn("down_proj is not contiguous",
                      backend.unfit_reason(experts, torch.zeros(1, 128, device=DEVICE)))

    def test_a_shape_moejit_refuses_falls_back(self):
        """unfit_reason asks the op's own checks (under torch.compile, at
        trace time): experts of an intermediate size that is no multiple
        of 8 run eagerly, with the rule in the warning."""
        model = model_with_an_unfit_layer()
        tokens = torch.randint(0, 256, (1, 5), device=DEVICE)
        with self.assertLogs("moejit.transformers", logging.WARNING) as logs:
            eager, ours = eager_and_moejit_logits(model, tokens)
        self.assertLess(rel_error(ours, eager), 1e-4)
        self.assertIn("intermediate = 60 must be a multiple of 8", logs.output[0])

    def test_a_fall_back_under_torch_compile_warns_once_and_breaks_no_graph(self):
        """The fallback's warning is given at trace time, once, and is not
        traced: a logging call in the graph broke it (and failed
        fullgraph=True) before the eager experts were even reached. What
        still breaks the graph is the eager experts' own loop over the
        experts it hit."""
        import moejit.transformers as backend
        model = model_with_an_unfit_layer()
        tokens = torch.randint(0, 256, (1, 5), device=DEVICE)
        with torch.no_grad():
            eager = model(tokens).logits
            model.set_experts_implementation("moejit")
            with mock.patch.object(backend, "_warned", set()), \
                    self.assertLogs("moejit.transformers", logging.WARNING) as logs:
                explanation = torch._dynamo.explain(model)(tokens)
                compiled = torch.compile(model, backend="eager")
                first, second = compiled(tokens).logits, compiled(tokens).logits
        self.assertEqual(len(logs.output), 1, logs.output)
        self.assertIn("intermediate = 60 must be a multiple of 8", logs.output[0])
        self.assertLess(rel_error(first, eager), 1e-4)
        self.assertTrue(torch.equal(first, second))
        self.assertGreater(explanation.graph_break_count, 0, "the eager experts' loop breaks")
        for reason in explanation.break_reasons:
            where = reason.user_stack[-1].filename if reason.user_stack else "?"
            self.assertFalse(where.endswith(os.path.join("moejit", "transformers.py")),
                             f"moejit broke the graph: {reason.reason}")

    @needs_gpu
    def test_fp32_greedy_generate_gives_the_same_tokens(self):
        for family in ("qwen3_moe", "mixtral", "olmoe"):
            with self.subTest(family=family):
                model = tiny_model(family, torch.float32)
                prompt = torch.randint(0, 256, (2, 8), device=DEVICE)
                kwargs = dict(max_new_tokens=32, min_new_tokens=32, do_sample=False)
                eager = model.generate(prompt, **kwargs)
                model.set_experts_implementation("moejit")
                ours = model.generate(prompt, **kwargs)
                self.assertEqual(ours.shape[1], 40)
                self.assertTrue(torch.equal(ours, eager), f"{ours}\n{eager}")

    @needs_gpu
    def test_bf16_logits_agree(self):
        for family in FAMILIES:
            with self.subTest(family=family):
                model = tiny_model(family, torch.bfloat16)
                tokens = torch.randint(0, 256, (4, 64), device=DEVICE)
                eager, ours = eager_and_moejit_logits(model, tokens)
                self.assertLess(rel_error(ours, eager), 1e-2)


if __name__ == "__main__":
    print(f"moejit {moejit.version()}, torch {torch.__version__}, device {DEVICE}",
          file=sys.stderr)
    unittest.main(verbosity=2)
