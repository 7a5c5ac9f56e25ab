// Planted candidate for task 01_relu: too much shared memory: 48 KiB static plus 200000 B dynamic is over the 227 KiB a block may have.
/* kevo-plan
{
  "name": "relu_too_much_smem",
  "task": "relu",
  "plan": {
    "steps": [
      
      {"kernel": "relu", "grid": ["(B * D + 255) // 256"], "block": [256], "shared_bytes": 200000,
       "args": ["x", "y", {"int64": "B * D"}]}
    ]
  }
}
*/

extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  __shared__ float tile[12288];
  extern __shared__ float more[];
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  more[threadIdx.x] = tile[threadIdx.x];
  __syncthreads();
  if (i < n) y[i] = fmaxf(more[threadIdx.x], 0.f);
}
