import torch
import torch.nn as nn

batch_size = 4
features = 8


class Model(nn.Module):
    """Active dropout in training mode: refused by both paths."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(features, features), nn.Dropout(0.5))

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return []
