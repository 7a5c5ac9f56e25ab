import torch
import torch.nn as nn

batch_size = 8
channels = 16
height = 12
width = 12


class Model(nn.Module):
    """A two-layer residual block with batch normalisation in training mode."""

    def __init__(self, channels):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        for layer in [self.layers]:  # a loop: the AST translation refuses it
            y = layer(x)
        return self.relu(x + y)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
