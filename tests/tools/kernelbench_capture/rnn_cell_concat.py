import torch
import torch.nn as nn

batch_size = 8
input_size = 16
hidden_size = 32
output_size = 8


class Model(nn.Module):
    """A recurrent cell on the concatenation of its input and hidden state (a weight of
    input_size + hidden_size columns), the state copied in place from forward's argument."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, x, initial_hidden):
        self.hidden.copy_(initial_hidden)
        for _ in range(1):  # a loop: the AST translation refuses it
            self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))
        return self.h2o(self.hidden)


def get_inputs():
    return [torch.rand(batch_size, input_size), torch.rand(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
