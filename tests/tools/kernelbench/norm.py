# A test problem in KernelBench's format (kevo's own): linear, group norm and batch norm (training mode).
import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, GroupNorm, BatchNorm1d, then GELU."""

    def __init__(self, in_features, out_features, num_groups, eps=1e-5):
        super(Model, self).__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.gn = nn.GroupNorm(num_groups, out_features, eps=eps)
        self.bn = nn.BatchNorm1d(out_features, momentum=0.2)

    def forward(self, x):
        x = self.fc(x)
        x = self.gn(x)
        x = self.bn(x)
        return torch.nn.functional.gelu(x)


batch_size = 512
in_features = 1024
out_features = 2048
num_groups = 32


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups, 1e-6]
