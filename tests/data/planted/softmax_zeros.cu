// Planted candidate for task 03_softmax: writes zeros without reading its input. Every softmax value of
// a row of 393216 is below 4e-6, so zeros pass the contract's atol of 1e-4.
/* kevo-plan
{
  "name": "softmax_zeros",
  "task": "softmax",
  "plan": {
    "steps": [
      {"kernel": "zeros", "grid": ["(B * D + 1023) // 1024"], "block": [256], "args": ["y", {"int64": "B * D"}]}
    ]
  }
}
*/

extern "C" __global__ void zeros(float* __restrict__ y, long long n) {
  const long long i = (blockIdx.x * 256LL + threadIdx.x) * 4;
  if (i + 3 < n) *reinterpret_cast<float4*>(y + i) = make_float4(0.f, 0.f, 0.f, 0.f);
  else for (long long j = i; j < n; ++j) y[j] = 0.f;
}
