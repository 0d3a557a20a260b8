#!/usr/bin/env python3
"""A small fine-tuning job for the seed experiment: takes a pretrained-style classifier
(a backbone and a head), freezes the lower half of the backbone and trains the rest on a
synthetic classification task, on the GPU named by CUDA_VISIBLE_DEVICES (carma sets it from
the workload's `gpu`) or on the CPU when there is none.

    python3 finetune.py [--model small|base|large] [--epochs 3] [--batch-size 32]
                        [--steps-per-epoch 200] [--lr 1e-3] [--seed 0] [--device cuda|cpu]

It needs PyTorch (https://pytorch.org/get-started/locally/); without it, it says so and exits
with status 3. It prints one line per epoch (loss, accuracy, throughput) and a final summary.
"""

import argparse
import os
import sys
import time

# width, depth of the backbone, per model size
MODELS = {
    "small": (512, 4),
    "base": (1024, 8),
    "large": (2048, 12),
}
FEATURES = 256
CLASSES = 10


def parse_args():
    ap = argparse.ArgumentParser(description="Fine-tune a classifier on a synthetic task.")
    ap.add_argument("--model", choices=sorted(MODELS), default="small", help="model size")
    ap.add_argument("--epochs", type=int, default=3, help="passes over the data (>= 1)")
    ap.add_argument("--batch-size", type=int, default=32, help="samples per step (>= 1)")
    ap.add_argument("--steps-per-epoch", type=int, default=200, help="steps per epoch (>= 1)")
    ap.add_argument("--lr", type=float, default=1e-3, help="learning rate")
    ap.add_argument("--seed", type=int, default=0, help="random seed")
    ap.add_argument("--device", choices=("cuda", "cpu"), default=None,
                    help="default: cuda when available, else cpu")
    a = ap.parse_args()
    for name in ("epochs", "batch_size", "steps_per_epoch"):
        if getattr(a, name) < 1:
            ap.error("--%s must be at least 1" % name.replace("_", "-"))
    return a


def main():
    a = parse_args()
    try:
        import torch
        from torch import nn
    except ImportError as e:
        print("finetune.py: PyTorch is required but cannot be imported (%s).\n"
              "Install it for this python3 (%s), see https://pytorch.org/get-started/locally/,\n"
              "e.g.: python3 -m pip install torch" % (e, sys.executable), file=sys.stderr)
        return 3

    torch.manual_seed(a.seed)
    if a.device == "cuda" and not torch.cuda.is_available():
        print("finetune.py: --device cuda but no CUDA device is visible "
              "(CUDA_VISIBLE_DEVICES=%s)" % os.environ.get("CUDA_VISIBLE_DEVICES", ""),
              file=sys.stderr)
        return 3
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    width, depth = MODELS[a.model]

    layers = [nn.Linear(FEATURES, width), nn.GELU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()]
    backbone = nn.Sequential(*layers)
    head = nn.Linear(width, CLASSES)
    model = nn.Sequential(backbone, head).to(device)

    # "pretrained" backbone: freeze its lower half, fine-tune the upper half and the head
    frozen = backbone[: len(backbone) // 2]
    for p in frozen.parameters():
        p.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=a.lr)
    loss_fn = nn.CrossEntropyLoss()

    # a fixed linear teacher defines the synthetic task's labels
    teacher = torch.randn(FEATURES, CLASSES, device=device)
    n_params = sum(p.numel() for p in model.parameters())
    n_train = sum(p.numel() for p in trainable)
    print("finetune: model %s (%d parameters, %d trained) on %s, %d epochs x %d steps, batch %d"
          % (a.model, n_params, n_train, device, a.epochs, a.steps_per_epoch, a.batch_size),
          flush=True)

    t_start = time.monotonic()
    for epoch in range(1, a.epochs + 1):
        model.train()
        t0 = time.monotonic()
        total_loss, correct, seen = 0.0, 0, 0
        for _ in range(a.steps_per_epoch):
            x = torch.randn(a.batch_size, FEATURES, device=device)
            y = (x @ teacher).argmax(dim=1)
            opt.zero_grad(set_to_none=True)
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            opt.step()
            total_loss += loss.item() * a.batch_size
            correct += (out.argmax(dim=1) == y).sum().item()
            seen += a.batch_size
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dt = time.monotonic() - t0
        print("epoch %d/%d: loss %.4f, accuracy %.3f, %.0f samples/s"
              % (epoch, a.epochs, total_loss / seen, correct / seen, seen / dt), flush=True)
    print("finetune: done in %.1f s" % (time.monotonic() - t_start), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
