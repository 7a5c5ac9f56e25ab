# A test problem in KernelBench's format (kevo's own): convolution, activation and a parameter.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d with padding, ReLU, plus a per-channel bias, times a scale."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape, scale):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.act = nn.ReLU()
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = scale

    def forward(self, x):
        x = self.conv(x)
        x = self.act(x)
        x = x + self.bias
        return x * self.scale


batch_size = 16
in_channels = 8
out_channels = 16
height = width = 64
kernel_size = 3
bias_shape = (out_channels, 1, 1)
scale = 0.5


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape, scale]
