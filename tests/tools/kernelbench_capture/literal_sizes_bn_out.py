import torch
import torch.nn as nn

batch_size = 8
widths = [16, 32]


class Model(nn.Module):
    """Convolutions whose widths come from a list, the image size a literal in get_inputs(), and the
    output returned straight from a batch norm."""

    def __init__(self, widths):
        super().__init__()
        layers, c = [], 3
        for w in widths:  # a loop: the AST translation refuses it
            layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w)]
            c = w
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


def get_inputs():
    return [torch.randn(batch_size, 3, 32, 32)]


def get_init_inputs():
    return [widths]
