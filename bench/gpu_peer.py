"""GPU exact top-k, HyperStream's CUDA backend against PyTorch on the same GPU and the same data.

Runs the `gpu_bench` example (which times HyperStream's GPU and CPU paths and writes its vectors and
queries to DIR), then times PyTorch's exact search (torch.cdist + torch.topk, float32, vectors resident
on the device) for the same query batches, checks that both found the same neighbours, and prints one
table with the ratios.

    python3 bench/gpu_peer.py <gpu_bench binary> DIR [rows dim k]
"""
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import torch


def main():
    binary, out_dir = sys.argv[1], sys.argv[2]
    rows, dim, k = (int(v) for v in (sys.argv[3:6] or (100_000, 768, 10)))
    ours = subprocess.run([binary, str(rows), str(dim), str(k), "--dump", out_dir], check=True, capture_output=True, text=True).stdout
    print(ours, end="")
    gpu_ms = {}
    for line in ours.splitlines():
        m = re.match(r"\| (\d+) \| ([\d.]+) \|", line)
        if m:
            gpu_ms[int(m.group(1))] = float(m.group(2))

    vectors = torch.from_numpy(np.fromfile(f"{out_dir}/vectors.f32", dtype="<f4").reshape(rows, dim)).cuda()
    queries = torch.from_numpy(np.fromfile(f"{out_dir}/queries.f32", dtype="<f4").reshape(-1, dim))
    torch.backends.cuda.matmul.allow_tf32 = False

    def search(q):
        d = torch.cdist(q.cuda(), vectors)
        values, indices = torch.topk(d, k, dim=1, largest=False, sorted=True)
        return indices.cpu()

    search(queries[:1])
    torch.cuda.synchronize()
    print()
    print(f"# PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: torch.cdist + torch.topk, queries copied in, indices copied out (as ours)")
    print("| queries | HyperStream GPU ms | PyTorch GPU ms | PyTorch/HyperStream | neighbours in common |")
    print("|---|---|---|---|---|")
    for batch, ours_ms in sorted(gpu_ms.items()):
        q = queries[:batch]
        times = []
        for _ in range(3 if batch >= 1000 else 7):
            start = time.perf_counter()
            found = search(q)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
        peer = statistics.median(times)
        # The reference neighbours, exact in float64 on the device, for the first query of the batch.
        exact = torch.topk(torch.cdist(q[:1].double().cuda(), vectors.double()), k, largest=False).indices.cpu()
        common = len(set(found[0].tolist()) & set(exact[0].tolist())) / k
        print(f"| {batch} | {ours_ms:.2f} | {peer:.2f} | {peer / ours_ms:.2f}x | {common:.2f} |")


if __name__ == "__main__":
    main()
