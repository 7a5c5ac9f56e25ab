// Planted candidate for task 01_relu: writes to its input: right output, input zeroed afterwards.
/* kevo-plan
{
  "name": "relu_writes_input",
  "task": "relu",
  "plan": {
    "steps": [
      
      {"kernel": "relu", "grid": ["(B * D + 255) // 256"], "block": [256], "shared_bytes": 0,
       "args": ["x", "y", {"int64": "B * D"}]}
    ]
  }
}
*/

extern "C" __global__ void relu(const float* x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = fmaxf(x[i], 0.f);
    const_cast<float*>(x)[i] = 0.f;
  }
}
