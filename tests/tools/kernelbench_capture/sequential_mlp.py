import torch
import torch.nn as nn

batch_size = 16
input_size = 64
hidden = 32
output_size = 10


class Model(nn.Module):
    """An nn.Sequential of Linear and ReLU layers."""

    def __init__(self, input_size, hidden, output_size):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(input_size, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, output_size))

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden, output_size]
