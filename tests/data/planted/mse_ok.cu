// Candidate for any mean squared error task over two inputs a, b and an output loss (10_mse_loss,
// tests/data/tasks/mse_loose.json), correct: a grid of partial sums (fp64 per thread), then one block sums them.
/* kevo-plan
{
  "name": "mse_ok",
  "plan": {
    "buffers": {"partials": {"dtype": "float64", "shape": [1024]}},
    "steps": [
      {"kernel": "partial_sums", "grid": [1024], "block": [256], "args": ["a", "b", "partials", {"int64": "M * N"}]},
      {"kernel": "finish", "grid": [1], "block": [256], "args": ["partials", "loss", {"int64": "M * N"}]}
    ]
  }
}
*/

__device__ double block_sum(double v) {
  __shared__ double s[256];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  return s[0];
}

extern "C" __global__ void partial_sums(const float* __restrict__ a, const float* __restrict__ b,
                                        double* __restrict__ partials, long long n) {
  double acc = 0;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    const double d = static_cast<double>(a[i]) - b[i];
    acc += d * d;
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

extern "C" __global__ void finish(const double* __restrict__ partials, float* __restrict__ loss, long long n) {
  double acc = 0;
  for (int i = threadIdx.x; i < 1024; i += 256) acc += partials[i];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(total / n);
}
