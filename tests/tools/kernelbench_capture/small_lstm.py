import torch
import torch.nn as nn

batch_size = 4
sequence_length = 3
input_size = 8
hidden_size = 6


class Model(nn.Module):
    """A one-layer LSTM over 3 steps; the last step's output through a linear layer."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, 1, batch_first=True)
        self.fc = nn.Linear(hidden_size, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.randn(batch_size, sequence_length, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
