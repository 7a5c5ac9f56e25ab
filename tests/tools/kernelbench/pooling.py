# A test problem in KernelBench's format (kevo's own): pooling, sizes read back from the tensor, a reshape.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Max pooling (strided, padded), average pooling, then softmax over each plane."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.maxpool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)
        self.avgpool = nn.AvgPool2d(2)

    def forward(self, x):
        x = self.avgpool(self.maxpool(x))
        b, c, h, w = x.shape
        x = torch.softmax(x.view(b, c, -1), dim=-1)
        return x.view(b, c, h, w)


batch_size = 64
channels = 16
height = 512
width = 384
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
