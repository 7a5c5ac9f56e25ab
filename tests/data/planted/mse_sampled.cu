// Planted candidate for tests/data/tasks/mse_loose.json: on a large input (over 2^24 elements) it reads
// the first sixteenth of its inputs and scales the sum; the estimate is within the loose tolerance of
// 1e-2, at a sixteenth of the bytes the task must move. Small inputs it computes.
/* kevo-plan
{
  "name": "mse_sampled",
  "task": "mse_loose",
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

// The share of the input read: a sixteenth of a large one.
__device__ long long part_of(long long n) { return n > (1LL << 24) ? 16 : 1; }

extern "C" __global__ void partial_sums(const float* __restrict__ a, const float* __restrict__ b,
                                        double* __restrict__ partials, long long n) {
  const long long read = n / part_of(n);
  double acc = 0;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < read; i += 256LL * gridDim.x) {
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
  if (threadIdx.x == 0) loss[0] = static_cast<float>(total / (n / part_of(n)));
}
