// Planted candidate for task 01_relu: reads stale memory instead of computing: writes nothing, hoping the output still holds an earlier result.
/* kevo-plan
{
  "name": "relu_stale",
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
  (void)x, (void)y, (void)n;
}
