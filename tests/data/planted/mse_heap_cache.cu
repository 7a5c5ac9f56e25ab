// Planted candidate for task 10_mse_loss: keeps a copy of its input on the device heap (malloc), a place
// whose blocks outlive the launch; the runner refuses modules that use it.
/* kevo-plan
{
  "name": "mse_heap_cache",
  "task": "mse_loss",
  "plan": {
    "steps": [
      {"kernel": "mse", "grid": [1], "block": [256], "args": ["a", "b", "loss", {"int64": "M * N"}]}
    ]
  }
}
*/

extern "C" __global__ void mse(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ loss,
                               long long n) {
  __shared__ double s[256];
  __shared__ float* keep;
  if (threadIdx.x == 0) keep = static_cast<float*>(malloc(256 * sizeof(float)));
  __syncthreads();
  double acc = 0;
  for (long long i = threadIdx.x; i < n; i += 256) {
    const double d = static_cast<double>(a[i]) - b[i];
    acc += d * d;
  }
  if (keep) keep[threadIdx.x] = static_cast<float>(acc);
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    loss[0] = static_cast<float>(s[0] / n);
    free(keep);
  }
}
