#!/usr/bin/env python3
"""Exact top-k benchmark: HyperStream's native exact search against faiss IndexFlatL2 (faiss-cpu)
and a memory-read floor, on the same clustered vectors, one query at a time.

    python3 bench/vector_topk.py [--rows 100000] [--dim 768] [--k 10] [--queries 20]

It builds the native benchmark (cargo, release), installs numpy and faiss-cpu into
target/bench-venv on first use, checks that both return the same neighbours, and prints a table
with the ratios. Targets (issue 4): >= 2x faster than faiss single-query, within 1.5x of the floor.
"""
import argparse
import json
import os
import subprocess
import sys
import time

from bench_venv import ROOT, reexec_inside


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    reexec_inside(__file__, ["numpy", "faiss-cpu"])

    import numpy as np
    import faiss

    work = os.path.join(ROOT, "target", "bench-data")
    os.makedirs(work, exist_ok=True)
    vectors_path = os.path.join(work, f"vectors-{args.rows}x{args.dim}.f32")
    queries_path = os.path.join(work, f"queries-{args.queries}x{args.dim}.f32")
    rng = np.random.default_rng(42)
    # Clustered synthetic data (fixed seed): 100 centres, gaussian spread around each.
    centres = rng.standard_normal((100, args.dim), dtype=np.float32)
    vectors = centres[rng.integers(0, 100, args.rows)] + 0.3 * rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    queries = centres[rng.integers(0, 100, args.queries)] + 0.3 * rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    vectors.astype("<f4").tofile(vectors_path)
    queries.astype("<f4").tofile(queries_path)

    subprocess.check_call(["cargo", "build", "-q", "--release", "--example", "topk_bench"], cwd=ROOT)
    binary = os.path.join(ROOT, "target", "release", "examples", "topk_bench")
    native = json.loads(subprocess.check_output(
        [binary, vectors_path, queries_path, str(args.dim), str(args.k), "l2"], cwd=ROOT))

    index = faiss.IndexFlatL2(args.dim)
    index.add(vectors)
    index.search(queries[:1], args.k)  # warm
    faiss_ms = []
    faiss_ids = []
    for q in queries:
        start = time.perf_counter()
        _, ids = index.search(q[None, :], args.k)
        faiss_ms.append((time.perf_counter() - start) * 1e3)
        faiss_ids.append(ids[0].tolist())
    faiss_ms = sorted(faiss_ms)[len(faiss_ms) // 2]

    agree = sum(len(set(a) & set(b)) for a, b in zip(native["ids"], faiss_ids)) / (args.k * args.queries)
    mb = args.rows * args.dim * 4 / 1e6
    print(f"exact top-{args.k}, {args.rows} x {args.dim} f32 ({mb:.0f} MB), median of {args.queries} single queries,"
          f" {native['threads']} threads, native kernels {native['isa']}, faiss {faiss.__version__}")
    print(f"{'workload':34} {'ours ms':>9} {'peer ms':>9} {'ratio':>7}")
    print(f"{'vs faiss IndexFlatL2':34} {native['search_ms']:9.2f} {faiss_ms:9.2f} {native['search_ms'] / faiss_ms:7.3f}"
          f"   (faiss / ours = {faiss_ms / native['search_ms']:.2f}x; target >= 2x)")
    print(f"{'vs memory-read floor (sum pass)':34} {native['search_ms']:9.2f} {native['floor_ms']:9.2f}"
          f" {native['search_ms'] / native['floor_ms']:7.3f}   (target <= 1.5)")
    print(f"{'stored table, Table::search':34} {native['table_ms']:9.2f} {native['search_ms']:9.2f}"
          f" {native['table_ms'] / native['search_ms']:7.3f}   (end to end over 4 data files, vs the in-memory search)")
    print(f"neighbours shared with faiss: {agree:.4f}; table search vs in-memory:"
          f" {native['table_agree'] / (args.k * args.queries):.4f}")
    print("command: python3 bench/vector_topk.py " + " ".join(a for a in sys.argv[1:] if a != "--inner"))


if __name__ == "__main__":
    main()
