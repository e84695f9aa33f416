#!/usr/bin/env python3
"""HNSW benchmark: HyperStream's graphs against hnswlib on the same clustered vectors.

    python3 bench/hnsw_bench.py [--rows 100000] [--dim 768] [--m 16] [--ef-construction 200]

It generates the fixed-seed clustered set (tests/gen_clustered.py), installs numpy and hnswlib into
target/bench-venv on first use, builds both indexes with the same M and ef_construction on every
core, then sweeps ef_search for single queries on one thread each. Recall@10 is measured against
the same exact neighbours (computed natively). Printed: build throughput, and the median latency of
each at the smallest swept ef that reaches recall@10 >= 0.95 (the target: ours / hnswlib <= 1.0),
plus our recall with a filter passing 10% of the rows.
"""
import argparse
import json
import os
import subprocess
import sys
import time

from bench_venv import ROOT, reexec_inside

EFS = [10, 20, 40, 60, 80, 120, 160, 240, 320, 480, 640]
TARGET = 0.95


def first_at_target(sweep):
    return next((point for point in sweep if point["recall"] >= TARGET), None)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    reexec_inside(__file__, ["numpy", "hnswlib==0.8.0"])

    import numpy as np
    import hnswlib

    work = os.path.join(ROOT, "target", "bench-data", "clustered")
    vectors_path, queries_path = subprocess.check_output(
        [sys.executable, os.path.join(ROOT, "tests", "gen_clustered.py"), "--rows", str(args.rows), "--dim",
         str(args.dim), "--queries", str(args.queries), work], text=True).split()
    subprocess.check_call(["cargo", "build", "-q", "--release", "--example", "hnsw_bench"], cwd=ROOT)
    binary = os.path.join(ROOT, "target", "release", "examples", "hnsw_bench")
    ours = json.loads(subprocess.check_output(
        [binary, vectors_path, queries_path, str(args.dim), str(args.k), "l2", str(args.m),
         str(args.ef_construction), ",".join(map(str, EFS))], cwd=ROOT))

    vectors = np.fromfile(vectors_path, dtype="<f4").reshape(-1, args.dim)
    queries = np.fromfile(queries_path, dtype="<f4").reshape(-1, args.dim)
    index = hnswlib.Index(space="l2", dim=args.dim)
    index.init_index(max_elements=len(vectors), M=args.m, ef_construction=args.ef_construction, random_seed=42)
    index.set_num_threads(ours["threads"])
    start = time.perf_counter()
    index.add_items(vectors, np.arange(len(vectors)))
    peer_build_s = time.perf_counter() - start
    index.set_num_threads(1)
    peer = []
    for ef in EFS:
        index.set_ef(ef)
        index.knn_query(queries[:1], k=args.k)  # warm
        ms, hits = [], 0
        for query, truth in zip(queries, ours["truth"]):
            start = time.perf_counter()
            labels, _ = index.knn_query(query[None, :], k=args.k)
            ms.append((time.perf_counter() - start) * 1e3)
            hits += len(set(labels[0].tolist()) & set(truth))
        peer.append({"ef": ef, "recall": hits / (args.k * len(queries)), "median_ms": sorted(ms)[len(ms) // 2]})

    rows = ours["rows"]
    print(f"HNSW, {rows} x {args.dim} f32 clustered (tests/gen_clustered.py), M={args.m}, ef_construction="
          f"{args.ef_construction}, build on {ours['threads']} threads, single queries on one thread, hnswlib 0.8.0")
    print(f"{'ef':>5} {'our recall':>11} {'our ms':>8} {'hnswlib recall':>15} {'hnswlib ms':>11} {'ours filtered 10%':>18}")
    for o, p, f in zip(ours["plain"], peer, ours["filtered"]):
        print(f"{o['ef']:5} {o['recall']:11.4f} {o['median_ms']:8.3f} {p['recall']:15.4f} {p['median_ms']:11.3f}"
              f" {f['recall']:10.4f} {f['median_ms']:6.3f} ms")
    print(f"{'build':34} {'ours':>10} {'hnswlib':>10} {'ratio':>7}")
    print(f"{'  seconds':34} {ours['build_s']:10.2f} {peer_build_s:10.2f} {ours['build_s'] / peer_build_s:7.3f}")
    print(f"{'  vectors/s':34} {rows / ours['build_s']:10.0f} {rows / peer_build_s:10.0f}"
          f" {peer_build_s / ours['build_s']:7.3f}   (throughput, ours / hnswlib)")
    mine, theirs, filtered = first_at_target(ours["plain"]), first_at_target(peer), first_at_target(ours["filtered"])
    if mine and theirs:
        print(f"median latency at recall@{args.k} >= {TARGET}: ours {mine['median_ms']:.3f} ms (ef {mine['ef']}, recall"
              f" {mine['recall']:.4f}), hnswlib {theirs['median_ms']:.3f} ms (ef {theirs['ef']}, recall"
              f" {theirs['recall']:.4f}); ratio {mine['median_ms'] / theirs['median_ms']:.3f} (target <= 1.0)")
    else:
        print(f"recall@{args.k} >= {TARGET} not reached in the sweep: ours {bool(mine)}, hnswlib {bool(theirs)}")
    print(f"recall@{args.k} >= {TARGET}: without a filter {'yes at ef ' + str(mine['ef']) if mine else 'NO'};"
          f" with a 10% filter {'yes at ef ' + str(filtered['ef']) if filtered else 'NO'}"
          f" (filtered results all satisfy the filter: checked)")
    print(f"graph size {ours['graph_bytes'] / 1e6:.1f} MB beside {rows * args.dim * 4 / 1e6:.0f} MB of vectors")
    print("command: python3 bench/hnsw_bench.py " + " ".join(a for a in sys.argv[1:] if a != "--inner"))


if __name__ == "__main__":
    main()
