"""Three measurements for notebook 09's small GPT, on the CPU, float32.

0. Parity with nanoGPT (``--only nanogpt``): the course ``GPT`` (``impl="fused"``, ``fused_sequence_loss``
   and ``training.make_optimizer``'s fused AdamW, as ``training.train`` steps it) against
   ``nanogpt_ref.NanoGPT``, a re-implementation (written here, not copied) of the block structure of
   Karpathy's nanoGPT ``model.py``: ``c_attn`` one
   ``Linear(d, 3d)``, SDPA with ``is_causal=True`` and no mask tensor, ``nn.GELU``, ``F.cross_entropy``
   on a flattened view inside ``forward``, AdamW with its two weight-decay groups and no ``fused``
   (as nanoGPT sets it up on a CPU). Both at nanoGPT's shape: 4 layers, 4 heads, 128 wide, T 128,
   vocabulary 1,000, batch 16, no biases, tied embeddings, 931,968 parameters each. One thread;
   one pair at a time, rounds alternate the two (A B, B A, ...); the paired ratio is nanoGPT's time / the
   course's in the same round (above 1: the course is faster), on the wall clock and on the thread's
   CPU clock (``time.thread_time``: the time the one computing thread ran, which a busy machine's
   other processes disturb far less than the wall clock; both reported). Dropout is left out (nanoGPT's
   ``nn.Dropout(0.0)`` calls cost a little; without them the baseline is, if anything, faster).
   Four pairs: the same maths with the exact GELU (the target: ratio >= 1) and with the tanh one; the
   course's default model (GPT-2's tanh GELU, dearer on a CPU) as ``training.train`` steps it against
   nanoGPT's; and that with the readable ``training.sequence_loss`` instead (what ``train`` used before).
1. Training throughput (tokens/s: forward + backward + AdamW step) of the course ``GPT``
   (``impl="fused"``) against a same-size model built from PyTorch's own
   ``nn.TransformerEncoderLayer`` (pre-norm, causal mask, no dropout, untied output layer like
   ours; exact GELU, the baseline): n_layers 4, n_heads 4, d_model 128, n_ctx 128, batch 16,
   vocabulary 1,000. For reference a third model, the same with the course model's tanh GELU
   (GPT-2's, dearer on the CPU). The models are stepped alternately in one process, so a busy
   moment slows them alike.
2. Generation of 256 new tokens (greedy, batch 1, a 16- and a 128-token prompt) with the KV cache against
   recomputing the whole sequence every step, on the same model (n_ctx 512 so 272 tokens fit),
   both through the fused kernels (``impl="fused"``); both must give the same tokens.

Every measurement alternates the two sides repeat by repeat, and reports the median time of each
and two ratios: of the medians, and the median of the per-repeat (paired) ratios, which a load
spike on this shared 2-core machine disturbs least. The load average is printed before and after.

Run: ``python benchmarks/bench_gpt.py --repeats 7`` (``--threads 1`` when the machine is busy) and
paste the tables into ``benchmarks/RESULTS_gpt.md``; ``--only nanogpt --rounds 9`` for the parity table
alone. Not a test (``tests/test_gpt_fused.py`` checks that ``NanoGPT`` is the course's model).
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time

import torch
from torch import nn

from course_utils.gpt.generation import generate
from course_utils.gpt.model import GPT, GPTConfig
from course_utils.gpt.fused import fused_sequence_loss
from course_utils.env.threads import torch_threads
from course_utils.gpt.training import TrainConfig, make_optimizer, sequence_loss

try:
    from benchmarks.nanogpt_ref import NANO, NanoGPT
except ModuleNotFoundError:  # run as a script: benchmarks/ is on the path, the repository root not
    from nanogpt_ref import NANO, NanoGPT

CFG = GPTConfig(d_vocab=1000, n_ctx=128, d_model=128, n_heads=4, n_layers=4, tie_embeddings=False)


class TorchEncoderGPT(nn.Module):
    """The same sizes from PyTorch's building blocks: embeddings, TransformerEncoder (norm_first, causal), LayerNorm, Linear."""

    def __init__(self, cfg: GPTConfig, activation="gelu"):
        super().__init__()
        self.tok = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.pos = nn.Parameter(0.02 * torch.randn(cfg.n_ctx, cfg.d_model))
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_mlp, dropout=0.0, activation=activation,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.d_vocab, bias=False)

    def forward(self, tokens):
        pos = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(pos)
        x = self.blocks(self.tok(tokens) + self.pos[:pos], mask=mask, is_causal=True)
        return self.head(self.ln(x))


def nanogpt_parity(rounds: int, steps: int = 4, batch: int = 16) -> dict:
    """Paired per-round ratios nanoGPT time / course time, one thread, for four pairs (see the docstring)."""
    torch.manual_seed(0)
    tanh = GPTConfig(**{**NANO.to_dict(), "activation": "gelu_tanh"})
    train_cfg = TrainConfig()
    course = {"exact": GPT(NANO), "tanh": GPT(tanh)}
    nano = {"exact": NanoGPT(NANO), "tanh": NanoGPT(tanh)}
    counts = {m.num_params() for m in course.values()} | {sum(p.numel() for p in m.parameters()) for m in nano.values()}
    if counts != {931_968}:
        raise RuntimeError(f"the models differ in size: {sorted(counts)} parameters")
    opts = {id(m): make_optimizer(m, train_cfg) for m in course.values()}
    opts |= {id(m): m.configure_optimizer(train_cfg.max_lr, train_cfg.betas, train_cfg.weight_decay)
             for m in nano.values()}
    data = torch.randint(0, NANO.d_vocab, (batch, NANO.n_ctx + 1), generator=torch.Generator().manual_seed(0))
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()  # as nanoGPT's get_batch stacks them

    def course_step(model, loss_fn):
        loss = loss_fn(model(x, impl="fused"), y)
        opts[id(model)].zero_grad(set_to_none=True)
        loss.backward()
        opts[id(model)].step()

    def nano_step(model):
        _, loss = model(x, y)
        opts[id(model)].zero_grad(set_to_none=True)
        loss.backward()
        opts[id(model)].step()

    sides = {"course, exact GELU": lambda: course_step(course["exact"], fused_sequence_loss),
             "course, tanh GELU": lambda: course_step(course["tanh"], fused_sequence_loss),
             "course, tanh GELU, sequence_loss": lambda: course_step(course["tanh"], sequence_loss),
             "nanoGPT, exact GELU": lambda: nano_step(nano["exact"]),
             "nanoGPT, tanh GELU": lambda: nano_step(nano["tanh"])}
    pairs = {"same maths, exact GELU (nanoGPT's)": ("course, exact GELU", "nanoGPT, exact GELU"),
             "same maths, tanh GELU (the course's default)": ("course, tanh GELU", "nanoGPT, tanh GELU"),
             "course's default model (tanh GELU) vs nanoGPT's": ("course, tanh GELU", "nanoGPT, exact GELU"),
             "the same with the readable sequence_loss": ("course, tanh GELU, sequence_loss", "nanoGPT, exact GELU")}
    out = {"ms": {}, "pairs": {}}
    with torch_threads(1):
        for label, pair in pairs.items():  # one pair at a time: each side follows the other (or itself) alike
            times = {name: ([], []) for name in pair}  # wall clock, thread CPU time
            for name in pair:  # warm-up
                sides[name](), sides[name]()
            for r in range(rounds):
                for name in pair[:: 1 if r % 2 == 0 else -1]:  # A B, B A, A B, ...
                    start, cpu_start = time.perf_counter(), time.thread_time()
                    for _ in range(steps):
                        sides[name]()
                    times[name][0].append((time.perf_counter() - start) / steps)
                    times[name][1].append((time.thread_time() - cpu_start) / steps)
            for name in pair:
                out["ms"].setdefault(name, tuple(1e3 * statistics.median(t) for t in times[name]))
            ours, theirs = pair
            for i, clock in enumerate(("wall", "cpu")):
                ratios = sorted(b / a for a, b in zip(times[ours][i], times[theirs][i]))
                out["pairs"][label, clock] = {"median": statistics.median(ratios), "min": ratios[0], "max": ratios[-1]}
    return out


def _gelu_tanh(x):
    return nn.functional.gelu(x, approximate="tanh")


def throughput(repeats: int, batch: int = 16) -> dict:
    """Tokens/s of the course GPT, the torch model (exact GELU, the baseline) and, for reference, the torch
    model with the course model's activation (GPT-2's tanh GELU, which costs more on the CPU)."""
    torch.manual_seed(0)
    models = {"course GPT (fused)": GPT(CFG), "nn.TransformerEncoderLayer": TorchEncoderGPT(CFG),
              "nn.TransformerEncoderLayer, tanh GELU": TorchEncoderGPT(CFG, activation=_gelu_tanh)}
    params = {name: sum(p.numel() for p in m.parameters()) for name, m in models.items()}
    opts = {name: torch.optim.AdamW(m.parameters(), lr=1e-3) for name, m in models.items()}
    data = torch.randint(0, CFG.d_vocab, (batch, CFG.n_ctx + 1), generator=torch.Generator().manual_seed(0))

    def step(name):
        model = models[name]
        logits = model(data[:, :-1], impl="fused") if isinstance(model, GPT) else model(data[:, :-1])
        loss = sequence_loss(logits, data[:, 1:])
        opts[name].zero_grad(set_to_none=True)
        loss.backward()
        opts[name].step()

    for name in models:  # warm-up
        step(name), step(name)
    times = {name: [] for name in models}
    for _ in range(repeats):
        for name in models:
            start = time.perf_counter()
            step(name)
            times[name].append(time.perf_counter() - start)
    tokens = batch * CFG.n_ctx
    course, torch_name, torch_tanh = list(models)
    return {"models": {name: {"tokens_per_s": tokens / statistics.median(t), "params": params[name]}
                       for name, t in times.items()},
            "ratio_of_medians": statistics.median(times[torch_name]) / statistics.median(times[course]),
            "paired_ratio": statistics.median(b / a for a, b in zip(times[course], times[torch_name])),
            "paired_ratio_tanh": statistics.median(b / a for a, b in zip(times[course], times[torch_tanh]))}


def kv_cache(repeats: int, n_new: int = 256, n_prompt: int = 16) -> dict:
    model = GPT(GPTConfig(d_vocab=1000, n_ctx=512, d_model=128, n_heads=4, n_layers=4))
    model.reset_parameters(torch.Generator().manual_seed(0))
    prompt = torch.randint(0, 1000, (1, n_prompt), generator=torch.Generator().manual_seed(1))
    cached_tokens = generate(model, prompt, n_new, temperature=0, impl="fused")
    same = torch.equal(cached_tokens, generate(model, prompt, n_new, temperature=0, use_cache=False, impl="fused"))
    times = {"cache": [], "recompute": []}
    for _ in range(repeats):
        for name, use_cache in (("cache", True), ("recompute", False)):
            start = time.perf_counter()
            generate(model, prompt, n_new, temperature=0, use_cache=use_cache, impl="fused")
            times[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"same_tokens": same, "cache_s": med["cache"], "recompute_s": med["recompute"],
            "speedup": med["recompute"] / med["cache"],
            "paired_speedup": statistics.median(r / c for c, r in zip(times["cache"], times["recompute"]))}


def load_average() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def print_parity(rounds: int) -> None:
    print(f"nanoGPT parity, 1 thread, {rounds} rounds of 4 steps a side, load average {load_average()} at the start")
    par = nanogpt_parity(rounds)
    print("| model | ms per step, wall clock (median) | ms per step, thread CPU time (median) |\n|---|---|---|")
    for name, (wall, cpu) in par["ms"].items():
        print(f"| {name} | {wall:.1f} | {cpu:.1f} |")
    print("| pair | clock | paired speed ratio course / nanoGPT: median | min | max |\n|---|---|---|---|---|")
    for (label, clock), r in par["pairs"].items():
        print(f"| {label} | {clock} | {r['median']:.3f} | {r['min']:.3f} | {r['max']:.3f} |")
    print(f"load average {load_average()} at the end")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=9, help="rounds of the nanoGPT comparison (one thread)")
    parser.add_argument("--only", choices=["nanogpt"], default=None, help="run the nanoGPT comparison alone")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's choice); 1 is steadier while other jobs share the cores")
    args = parser.parse_args()
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M}, torch {torch.__version__}")
    print_parity(args.rounds)
    if args.only:
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"{torch.get_num_threads()} threads, load average {load_average()} at the start")
    tp = throughput(max(args.repeats, 5) * 3)
    print("| model | parameters | tokens/s (median) |\n|---|---|---|")
    for name, r in tp["models"].items():
        print(f"| {name} | {r['params']:,} | {r['tokens_per_s']:,.0f} |")
    print(f"ratio course / torch: {tp['ratio_of_medians']:.2f} (of the medians), {tp['paired_ratio']:.2f} (median of "
          f"the paired steps); against the tanh-GELU torch model {tp['paired_ratio_tanh']:.2f} (paired); "
          f"load average {load_average()}")
    print("| prompt + 256 new tokens | KV cache s | recompute s | speed-up (of medians) | speed-up (paired) | same tokens |"
          "\n|---|---|---|---|---|---|")
    for n_prompt in (16, 128):
        kv = kv_cache(args.repeats, n_prompt=n_prompt)
        print(f"| {n_prompt} + 256 | {kv['cache_s']:.3f} | {kv['recompute_s']:.3f} | {kv['speedup']:.1f}x | "
              f"{kv['paired_speedup']:.1f}x | {kv['same_tokens']} |")
    print(f"load average {load_average()} at the end")


if __name__ == "__main__":
    main()
