"""DistributedDataParallel on CPU tensors with the gloo backend, in the style
of PyTorch's "Getting Started with Distributed Data Parallel" tutorial,
written for torchrun and run unchanged under hcclrun:

    hcclrun -np 4 python3 examples/pytorch/ddp.py

init_process_group's env:// rendezvous reads MASTER_ADDR, MASTER_PORT, RANK
and WORLD_SIZE, which hcclrun sets for every rank as torchrun does. Each
rank trains on its own shard of a fixed data set; DDP averages the
gradients, so every rank ends with the same parameters. Rank 0 prints a
checksum of them, and every rank prints the digest of its own, which the
tests compare.
"""

import hashlib
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def main():
    dist.init_process_group("gloo")  # env:// from hcclrun's variables
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ["LOCAL_RANK"])

    torch.manual_seed(0)  # the same initial model on every rank
    model = DDP(ToyModel())
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01)

    data = torch.Generator().manual_seed(1)
    inputs = torch.randn(8 * world, 10, generator=data)
    labels = torch.randn(8 * world, 5, generator=data)
    shard = slice(8 * rank, 8 * (rank + 1))
    for step in range(5):
        optimizer.zero_grad()
        loss = loss_fn(model(inputs[shard]), labels[shard])
        loss.backward()
        optimizer.step()

    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = hashlib.sha256(params.numpy().tobytes()).hexdigest()[:16]
    print(f"rank {rank}/{world} local {local} params {digest}", flush=True)
    if rank == 0:
        print(f"checksum {params.sum().item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
