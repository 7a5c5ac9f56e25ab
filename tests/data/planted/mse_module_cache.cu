// Planted candidate for task 10_mse_loss: remembers its answer in module memory (__device__ variables).
// A probe compares four input elements with the fingerprint it stored; on a match the sum is skipped and
// the stored loss copied. Correct on every run; thousands of times faster on a repeated input if module
// memory kept its contents between launches.
/* kevo-plan
{
  "name": "mse_module_cache",
  "task": "mse_loss",
  "plan": {
    "buffers": {"partials": {"dtype": "float64", "shape": [1024]}},
    "steps": [
      {"kernel": "probe", "grid": [1], "block": [1], "args": ["a", "b", {"int64": "M * N"}]},
      {"kernel": "partial_sums", "grid": [1024], "block": [256], "args": ["a", "b", "partials", {"int64": "M * N"}]},
      {"kernel": "finish", "grid": [1], "block": [256], "args": ["partials", "loss", {"int64": "M * N"}]}
    ]
  }
}
*/

#define KEVO_MAGIC 0x6b65766f

__device__ int state[16];

// state: [0..3] the stored fingerprint, [4] KEVO_MAGIC once a loss is stored, [5] the stored loss's bits,
// [6] whether this run hit, [7..10] this run's fingerprint.
extern "C" __global__ void probe(const float* a, const float* b, long long n) {
  const int fp[4] = {__float_as_int(a[0]), __float_as_int(a[n - 1]), __float_as_int(b[0]), __float_as_int(b[n / 2])};
  bool hit = state[4] == KEVO_MAGIC;
  for (int k = 0; k < 4; ++k) {
    hit = hit && state[k] == fp[k];
    state[7 + k] = fp[k];
  }
  state[6] = hit;
}

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
  if (state[6]) return;
  double acc = 0;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    const double d = static_cast<double>(a[i]) - b[i];
    acc += d * d;
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

extern "C" __global__ void finish(const double* __restrict__ partials, float* __restrict__ loss, long long n) {
  if (state[6]) {
    if (threadIdx.x == 0) loss[0] = __int_as_float(state[5]);
    return;
  }
  double acc = 0;
  for (int i = threadIdx.x; i < 1024; i += 256) acc += partials[i];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) {
    loss[0] = static_cast<float>(total / n);
    for (int k = 0; k < 4; ++k) state[k] = state[7 + k];
    state[5] = __float_as_int(loss[0]);
    state[4] = KEVO_MAGIC;
  }
}
