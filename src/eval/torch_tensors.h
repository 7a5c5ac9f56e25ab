// The part of LibTorch the oracle uses: tensors and ATen's operators (torch::conv2d, torch::softmax,
// ...), grad mode, seeds and CUDA's presence. Not <torch/torch.h>, whose modules, optimisers and
// data loaders eval/ never uses and which doubles the time each of its files takes to compile.
// eval/ only (and its tests); the project precompiles it for them (CMakeLists.txt).
#pragma once

#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>
