# cuDNN, eager and torch.compile baselines for the conv family's benchmark (bench/conv_bench.sh):
# the shapes of bench/conv_bench.cu with task 14's tail (relu(conv + b) + b2[C, 1, 1]). cuDNN in
# full fp32 (what kevo's library family runs now) and, for the tensor cores' practical rate in
# the same run, cuDNN with TF32. Prints one line per measurement.
# Usage: python3 bench/conv_torch.py [--no-compile | --compile-all]
import sys
import torch
import torch.nn.functional as F

# (name, N, C, OC, spatial sizes ((H, W) or (D, H, W)), kernel, stride, padding, dilation, groups),
# as in bench/conv_bench.cu.
SHAPES = [
    ("task14", 128, 64, 128, (128, 128), 3, 1, 0, 1, 1),
    ("grouped_s2_d2", 32, 64, 128, (57, 45), 3, 2, 1, 2, 4),
    ("stem7x7", 32, 3, 64, (224, 224), 7, 2, 3, 1, 1),
    ("pad1_c256", 32, 256, 256, (31, 31), 3, 1, 1, 1, 1),
    ("conv3d_pad1", 16, 32, 64, (16, 64, 64), 3, 1, 1, 1, 1),
]


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


def main():
    dev = "cuda"
    torch.backends.cudnn.benchmark = False
    for name, n, c, oc, spatial, k, s, p, d, g in SHAPES:
        taps = k ** len(spatial)
        x = torch.rand(n, c, *spatial, device=dev)
        wt = (torch.rand(oc, c // g, *(k,) * len(spatial), device=dev) * 2 - 1) / (c // g * taps) ** 0.5
        b = (torch.rand(oc, device=dev) * 2 - 1) / (c // g * taps) ** 0.5
        b2 = torch.randn(oc, *(1,) * len(spatial), device=dev)
        convnd = F.conv3d if len(spatial) == 3 else F.conv2d

        def conv(x, wt, b):
            return convnd(x, wt, b, stride=s, padding=p, dilation=d, groups=g)

        def graph(x, wt, b, b2):
            return torch.relu(conv(x, wt, b)) + b2

        y = conv(x, wt, b)
        flop = 2 * y.numel() * (c // g) * taps
        runs = [("cudnn fp32", lambda: conv(x, wt, b), False), ("eager fp32", lambda: graph(x, wt, b, b2), False),
                ("cudnn tf32", lambda: conv(x, wt, b), True)]
        # torch.compile takes tens of seconds per graph: task 14 only, unless --compile-all.
        if "--no-compile" not in sys.argv and (name == "task14" or "--compile-all" in sys.argv):
            compiled = torch.compile(graph)
            runs.append(("compile fp32", lambda: compiled(x, wt, b, b2), False))
        for label, f, tf32 in runs:
            torch.backends.cudnn.allow_tf32 = tf32
            try:
                ms = time_ms(f)
                print(f"torch {label:<13} {name:<14} {ms:8.3f} ms {flop / ms / 1e9:7.1f} TFLOP/s", flush=True)
            except Exception as e:  # a compile failure is a missing figure, not a failed run
                print(f"torch {label:<13} {name:<14} failed: {str(e).splitlines()[0]}", flush=True)
        torch.backends.cudnn.allow_tf32 = False


if __name__ == "__main__":
    main()
