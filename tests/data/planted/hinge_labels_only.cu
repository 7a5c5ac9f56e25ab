// Planted candidate for task 11_hinge_loss: on a large input (over 2^24 elements) it reads only the
// labels t and extrapolates from the declared distribution of p (uniform on [0, 1)): each column adds
// E[max(0, 1 - p)] = 0.5 where t = 1 and E[1 + p] = 1.5 where t = -1. Small inputs it computes.
/* kevo-plan
{
  "name": "hinge_labels_only",
  "task": "hinge_loss",
  "plan": {
    "steps": [
      {"kernel": "hinge", "grid": [1], "block": [256], "args": ["p", "t", "loss", {"int64": "M * N"}, {"int64": "N"}]}
    ]
  }
}
*/

extern "C" __global__ void hinge(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ loss,
                                 long long n, long long cols) {
  __shared__ double s[256];
  const bool extrapolate = n > (1LL << 24);
  double acc = 0;
  if (extrapolate)
    for (long long j = threadIdx.x; j < cols; j += 256) acc += t[j] > 0.f ? 0.5 : 1.5;
  else
    for (long long i = threadIdx.x; i < n; i += 256) acc += fmaxf(1.f - p[i] * t[i % cols], 0.f);
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = static_cast<float>(s[0] / (extrapolate ? cols : n));
}
