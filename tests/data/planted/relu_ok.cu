// Planted candidate for task 01_relu: correct: one element per thread.
/* kevo-plan
{
  "name": "relu_ok",
  "task": "relu",
  "plan": {
    "steps": [
      
      {"kernel": "relu", "grid": ["(B * D + 255) // 256"], "block": [256], "shared_bytes": 0,
       "args": ["x", "y", {"int64": "B * D"}]}
    ]
  }
}
*/

extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}
