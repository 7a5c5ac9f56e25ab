# Eager and torch.compile baselines for the gemm family's benchmarks (bench/gemm_bench.sh): task 13
# (linear + scale + leaky ReLU, fp32), a square 4096^3 fp32 matmul, a bf16 8192^3 linear with a
# bias-ReLU tail. Full fp32 as the contracts ask (no TF32). Prints one line per measurement.
import sys
import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def time_ms(f, reps=20):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(3):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            f()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / reps)
    return sorted(times)[1]


def task13(x, W, b):
    return F.leaky_relu(F.linear(x, W, b) * 2.0, negative_slope=0.1)


def bf16_tail(x, W, b):
    return (torch.relu(F.linear(x, W, b)) * 0.5)


def main():
    dev = "cuda"
    cases = []
    M, K, N = 1024, 8192, 8192
    x = torch.rand(M, K, device=dev)
    W = (torch.rand(N, K, device=dev) * 2 - 1) / K**0.5
    b = (torch.rand(N, device=dev) * 2 - 1) / K**0.5
    cases.append(("task13", task13, (x, W, b), 2 * M * N * K))
    A = torch.rand(4096, 4096, device=dev)
    B = torch.rand(4096, 4096, device=dev)
    cases.append(("matmul4096", torch.matmul, (A, B), 2 * 4096**3))
    xb = torch.rand(8192, 8192, device=dev, dtype=torch.bfloat16)
    Wb = ((torch.rand(8192, 8192, device=dev) * 2 - 1) / 8192**0.5).bfloat16()
    bb = ((torch.rand(8192, device=dev) * 2 - 1) / 8192**0.5).bfloat16()
    cases.append(("bf16_8192", bf16_tail, (xb, Wb, bb), 2 * 8192**3))
    for name, f, args, flop in cases:
        ms = time_ms(lambda: f(*args))
        print(f"torch eager   {name:<12} {ms:8.3f} ms {flop / ms / 1e9:7.1f} TFLOP/s", flush=True)
    if "--no-compile" in sys.argv:
        return
    for name, f, args, flop in cases:
        try:
            g = torch.compile(f)
            ms = time_ms(lambda: g(*args))
            print(f"torch compile {name:<12} {ms:8.3f} ms {flop / ms / 1e9:7.1f} TFLOP/s", flush=True)
        except Exception as e:  # a compile failure is a missing figure, not a failed run
            print(f"torch compile {name:<12} failed: {str(e).splitlines()[0]}", flush=True)


if __name__ == "__main__":
    main()
