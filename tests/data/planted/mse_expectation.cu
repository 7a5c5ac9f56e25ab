// Planted candidate for task 10_mse_loss: on a large input (over 2^24 elements) it returns the expectation
// of the declared distributions, E[(a - b)^2] = 1/6 for a, b uniform on [0, 1), which the mean of 2^30
// terms matches within the tolerance; small inputs it computes.
/* kevo-plan
{
  "name": "mse_expectation",
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
  if (n > (1LL << 24)) {
    if (threadIdx.x == 0) loss[0] = 1.f / 6.f;
    return;
  }
  __shared__ double s[256];
  double acc = 0;
  for (long long i = threadIdx.x; i < n; i += 256) {
    const double d = static_cast<double>(a[i]) - b[i];
    acc += d * d;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = static_cast<float>(s[0] / n);
}
