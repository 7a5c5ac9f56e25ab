"""Runs a rendered pool candidate on the CPU and compares it with a naive reference (no GPU needed).

    build/kevo space tasks/12_max_pool2d.json --sample 20 --out /tmp/c
    python3 tools/pool_emulate.py /tmp/c/pool_stream_max_pool2d_0.cu tasks/12_max_pool2d.json '{"N":1,"C":2,"H":70,"W":300}'

The candidate's device source is compiled as host C++ (g++ -std=c++20) against a small emulation
of what the pool kernels use: every thread of a block is a std::thread, a warp's shuffles meet at
a barrier of its 32 threads, __syncthreads at one of the block's, dynamic shared memory is one
array. The launch follows the candidate's plan evaluated for the given axes; the reference
(written here from torch's definitions, the fused prologue and epilogue through the candidate's
own Body) pools every output directly. Small shapes only: a thread per GPU thread. Exit status
0 when every output matches (abs and rel 1e-5), 1 when some do not, 2 when it cannot run.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")

SHIM = r"""
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
struct Dim3 { unsigned x = 0, y = 0, z = 0; };
thread_local Dim3 threadIdx, blockIdx;
Dim3 blockDim, gridDim;
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
// Cache-hinted loads (common.cuh's load_hinted) are plain loads on the CPU.
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
using std::min; using std::max;
using std::exp; using std::tanh; using std::log; using std::sqrt; using std::erf;
struct Warp { std::barrier<> bar{32}; float slots[32]; };
thread_local Warp* this_warp;
thread_local std::barrier<>* this_block;
thread_local int lane_id;
inline float __shfl_sync(unsigned, float v, int src, int width = 32) {
  if (width != 32) { std::fprintf(stderr, "shuffle width %d not emulated\n", width); std::exit(2); }
  this_warp->slots[lane_id] = v;
  this_warp->bar.arrive_and_wait();
  const float r = this_warp->slots[src & 31];
  this_warp->bar.arrive_and_wait();
  return r;
}
inline float __shfl_xor_sync(unsigned m, float v, int x, int width = 32) { return __shfl_sync(m, v, lane_id ^ x, width); }
inline void __syncthreads() { this_block->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { this_warp->bar.arrive_and_wait(); }
namespace kevo { float pool_tile[232448 / 4]; }

template <typename F>
void launch(unsigned grid, unsigned bx, unsigned by, F kernel) {
  gridDim = {grid, 1, 1};
  blockDim = {bx, by, 1};
  const unsigned threads = bx * by;
  for (unsigned b = 0; b < grid; ++b) {
    std::barrier<> block(threads);
    std::vector<std::unique_ptr<Warp>> warps;
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Warp>());
    std::vector<std::thread> all;
    for (unsigned t = 0; t < threads; ++t)
      all.emplace_back([&, t] {
        threadIdx = {t % bx, t / bx, 0};
        blockIdx = {b, 0, 0};
        this_warp = warps[t / 32].get();
        this_block = &block;
        lane_id = (int)(t % 32);
        kernel();
      });
    for (auto& th : all) th.join();
  }
}
"""


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    cu, task_path, axes = os.path.abspath(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    src = open(cu).read()
    plan = json.loads(re.search(r"/\* kevo-plan\n(.*?)\n\*/", src, re.S).group(1))["plan"]
    task = json.load(open(task_path))

    def ev(e) -> int:  # plan and contract expressions are Python's integer arithmetic
        return int(eval(str(e), {"__builtins__": {}}, dict(axes)))

    (step,) = plan["steps"]
    if step["block"][0] * (step["block"][1] if len(step["block"]) > 1 else 1) % 32:
        print("blocks of whole warps only", file=sys.stderr)
        return 2
    shapes = {n: [ev(d) for d in t["shape"]] for n, t in {**task["inputs"], **task["outputs"]}.items()}
    (out_name,) = task["outputs"]
    node = re.search(r"= (max_pool2d|avg_pool2d|avg_pool1d)\(", src).group(1)
    first_in = next(a for a in step["args"] if isinstance(a, str))
    ishape, oshape = shapes[first_in], shapes[out_name]
    one_d = node == "avg_pool1d"
    H, W = (1, ishape[-1]) if one_d else tuple(ishape[-2:])
    OH, OW = (1, oshape[-1]) if one_d else tuple(oshape[-2:])
    planes = math.prod(ishape[:-1] if one_d else ishape[:-2])
    block = step["block"] + [1] * (2 - len(step["block"]))
    if "shared_bytes" in step and ev(step["shared_bytes"]) > 232448:
        print("shared memory past the emulated array", file=sys.stderr)
        return 2

    bufs = [a for a in step["args"] if isinstance(a, str)]
    decl = "\n".join(f"  std::vector<float> {n}(size_t({math.prod(shapes[n])}), NAN);" for n in bufs)
    fill = "\n".join(f"  for (auto& v : {n}) v = nd(rng);" for n in bufs if n != out_name)
    args = ", ".join(f"{a}.data()" if isinstance(a, str) else str(ev(next(iter(a.values())))) for a in step["args"])
    fields = ", ".join("ref.data()" if n == out_name else f"{n}.data()" for n in bufs)
    seed = random.randrange(1 << 30)
    main_cpp = f"""
int main() {{
  const int H = {H}, W = {W}, OH = {OH}, OW = {OW};
  const long long planes = {planes};
{decl}
  std::vector<float> ref({out_name}.size(), NAN);
  std::mt19937 rng({seed});
  std::normal_distribution<float> nd(0.f, 1.f);
{fill}
  launch({ev(step["grid"][0])}, {block[0]}, {block[1]}, [&] {{ {step["kernel"]}({args}); }});
  Body::Params p{{{fields}}};
  for (long long pl = 0; pl < planes; ++pl)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow) {{
        const int h0 = oh * Window::kStrideH - Window::kPadH, w0 = ow * Window::kStrideW - Window::kPadW;
        double acc = Window::kAverage ? 0.0 : -INFINITY;
        for (int i = 0; i < Window::kH; ++i)
          for (int j = 0; j < Window::kW; ++j) {{
            const int ih = h0 + i * Window::kDilationH, iw = w0 + j * Window::kDilationW;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const float v = Body::load(p, pl * H * W + (long long)ih * W + iw);
            acc = Window::kAverage ? acc + v : std::max(acc, (double)v);
          }}
        if (Window::kAverage) {{  // torch's avg_pool divisor
          int he = std::min(h0 + Window::kH, H + Window::kPadH), we = std::min(w0 + Window::kW, W + Window::kPadW);
          const int size = (he - h0) * (we - w0);
          const int hs = std::max(h0, 0), ws = std::max(w0, 0);
          he = std::min(he, H), we = std::min(we, W);
          acc /= Window::kDivisor ? Window::kDivisor : Window::kCountPad ? size : (he - hs) * (we - ws);
        }}
        Body::store(p, (pl * OH + oh) * OW + ow, (float)acc);
      }}
  long long bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {{
    const float got = {out_name}[i], want = ref[i];
    if (!(std::fabs(got - want) <= 1e-5f + 1e-5f * std::fabs(want))) {{
      if (bad < 5)
        std::printf("  output %zu (plane %lld, row %lld, column %lld): %g, want %g\\n", i, (long long)(i / (OH * OW)),
                    (long long)(i / OW % OH), (long long)(i % OW), got, want);
      ++bad;
    }}
  }}
  std::printf("%s: %lld of %zu outputs wrong\\n", bad ? "FAIL" : "ok", bad, ref.size());
  return bad != 0;
}}
"""
    with tempfile.TemporaryDirectory() as tmp:
        harness = os.path.join(tmp, "harness.cpp")
        with open(harness, "w") as f:
            f.write(SHIM + f'#include "{cu}"\n' + main_cpp)
        exe = os.path.join(tmp, "harness")
        # A rendered candidate includes kevo's template library as "kevo/<path>": templates/ under that name.
        os.symlink(TEMPLATES, os.path.join(tmp, "kevo"))
        r = subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "-w", "-I", tmp, harness, "-o", exe],
                           capture_output=True, text=True)
        if r.returncode:
            print(r.stderr[:4000], file=sys.stderr)
            return 2
        r = subprocess.run([exe], capture_output=True, text=True)
        print(r.stdout.strip())
        return 1 if r.returncode == 1 else (0 if r.returncode == 0 else 2)


if __name__ == "__main__":
    sys.exit(main())
