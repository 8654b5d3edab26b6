#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A CPU training loop with PyTorch (Debian's python3-torch): batches prepared in Python (lists
of records turned into tensors, as a data loader does), a small MLP trained with SGD.  The mix
of a real job: Python allocations for the batches, large native ones for the tensors and the
autograd graph.

    torch_train.py [--gate] [STEPS]   (default 100)
    --gate: read one line from stdin first (the harness attaches a tracer while we wait).
One intra-op thread, so that two cores give stable timings.
"""
import sys

import torch


def batch(step, n=256, width=64):
    x = step * 2654435761 & 0xFFFFFFFF
    rows, labels = [], []
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        rows.append([((x >> (k % 24)) & 0xFF) / 255.0 for k in range(width)])
        labels.append(x % 10)
    return torch.tensor(rows), torch.tensor(labels)


def main():
    args = sys.argv[1:]
    gate = "--gate" in args
    if gate:
        args.remove("--gate")
    steps = int(args[0]) if args else 100
    torch.set_num_threads(1)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()
    if gate:
        sys.stdin.readline()
    for step in range(steps):
        xb, yb = batch(step)
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
