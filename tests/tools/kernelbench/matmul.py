# A test problem in KernelBench's format (kevo's own): a matrix product with a transposed operand.
import torch
import torch.nn as nn


class Model(nn.Module):
    """C = alpha * A @ B.T"""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """Multiplies."""
        return torch.matmul(A, B.T) * self.alpha


M = 4096 * 2
K = 2048
N = 768


def get_inputs():
    A = torch.rand(M, K)
    B = torch.randn(N, K) * 0.5 + 1.0
    return [A, B]


def get_init_inputs():
    return [2.0]
