"""Is notebook 06's 20-features-in-5-dimensions sweep trained to convergence? Compared with the paper's settings.

Not a test: run it by hand, ``python benchmarks/bench_toy_convergence.py --seeds 0 1 2 3 4``, and paste the table
into benchmarks/RESULTS_superposition.md. For each seed, three trainings of the same sweep (importance 0.7^i,
sparsities 0, 0.7, 0.9, 0.97, 0.99, 0.997, the same initial W and data stream):

* **paper**: Elhage et al.'s settings (their notebook's ``optimize``): AdamW, learning rate 1e-3 constant,
  batches of 1,024, 10,000 steps;
* **course**: ``toy_models.train_sweep``'s defaults (Adam, lr 1e-2 falling along a cosine to 1e-4, batches of
  1,024, 2,000 steps), what the notebook runs;
* **course x2**: the same schedule stretched over 4,000 steps.

Each reports the represented features per sparsity (norm > 0.5), the features still near the threshold
(norm within 0.15 of 0.5: not settled), the held-out loss on 200,000 fresh inputs, and CPU seconds.
"""

from __future__ import annotations

import argparse
import time

import torch

from course_utils.superposition import toy_models
from course_utils.env.threads import torch_threads

SPARSITY = [0.0, 0.7, 0.9, 0.97, 0.99, 0.997]
IMPORTANCE = 0.7 ** torch.arange(20.0)


def held_out_loss(model: toy_models.ToyModel, n: int = 200_000) -> list[float]:
    gen = torch.Generator().manual_seed(12_345)
    with torch.no_grad(), torch_threads(1):
        return (sum(model.loss(model.generate_batch(10_000, gen)) for _ in range(n // 10_000)) / (n // 10_000)).tolist()


def paper(seed: int) -> toy_models.ToyModel:
    model = toy_models.ToyModel(len(SPARSITY), 20, 5, sparsity=SPARSITY, importance=IMPORTANCE, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with torch_threads(1):
        for _ in range(10_000):
            loss = model.loss(model.generate_batch(1_024, gen))
            optimiser.zero_grad(set_to_none=True)
            loss.sum().backward()
            optimiser.step()
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    print("| seed | training | features kept per sparsity | not settled | held-out loss per sparsity | CPU s |")
    print("|---:|---|---|---|---|---:|")
    runs = {"paper": paper, "course": lambda s: toy_models.train_sweep(20, 5, SPARSITY, IMPORTANCE, seed=s)[0],
            "course x2": lambda s: toy_models.train_sweep(20, 5, SPARSITY, IMPORTANCE, steps=4_000, seed=s)[0]}
    for seed in args.seeds:
        for name, train in runs.items():
            start = time.process_time()
            model = train(seed)
            seconds = time.process_time() - start
            norms = toy_models.feature_norms(model.W.detach())
            unsettled = ((norms - 0.5).abs() < 0.15).sum(dim=-1).tolist()
            losses = ", ".join(f"{v:.6f}" for v in held_out_loss(model))
            print(f"| {seed} | {name} | {toy_models.represented_features(model.W.detach()).tolist()} | {unsettled} | "
                  f"{losses} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
