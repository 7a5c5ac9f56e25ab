# A test problem in KernelBench's format (kevo's own): reductions, a masked loss, sizes that must match.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Row maxima and a hinge loss of x against labels; x's columns broadcast against the batch."""

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x, labels, mask):
        peak = torch.max(x, dim=self.dim, keepdim=True).values
        total = torch.sum(x * mask, dim=self.dim)
        hinge = torch.mean(torch.clamp(1 - x * labels, min=0))
        return peak, total, hinge


batch_size = 16384
input_shape = (16384,)
dim = 1


def get_inputs():
    x = torch.rand(batch_size, *input_shape)
    labels = torch.randint(0, 2, (batch_size,)).float() * 2 - 1
    mask = torch.randint(0, 2, x.shape).bool()
    return [x, labels, mask]


def get_init_inputs():
    return [dim]
