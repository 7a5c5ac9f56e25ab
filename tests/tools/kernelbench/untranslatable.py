# A test problem in KernelBench's format (kevo's own): a loop whose trip count is read from the data (.item()).
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies tanh a number of times."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def forward(self, x):
        for _ in range(self.steps + int(x.abs().max().item() > 2)):
            x = torch.tanh(x)
        return x


batch_size = 64
dim = 128


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return [3]
