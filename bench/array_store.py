#!/usr/bin/env python3
"""Array store benchmark: HyperStream's array store against NumPack (numpack==0.4.5) and NPY files on
the NumPack README's workloads: 1M x 10 f32 for save, load, lazy load, replace, append and random
getitem, and a streaming top-10 over 1M x 128 f32.

    python3 bench/array_store.py [--rows 1000000] [--queries 10]

It builds the native benchmark (cargo, release), installs numpy and numpack into target/bench-venv
on first use, checks that both top-10 searches return the same rows, and prints a table with the
ratios (ours / peer; below 1 is faster) and the cost of the durable mode (fsync before returning).
Targets (issue 5): every operation <= 1.0 against NumPack; full load within 1.1x of NPY.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from bench_venv import ROOT, reexec_inside

NUMPACK = "numpack==0.4.5"


def median_ms(runs, f, before=lambda: None):
    times = []
    for _ in range(runs):
        before()
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    reexec_inside(__file__, ["numpy", NUMPACK])

    import numpy as np
    import numpack
    from numpack import NumPack
    from numpack.vector_engine import StreamingVectorSearch

    work = os.path.join(ROOT, "target", "bench-data", "arrays")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = np.random.default_rng(42)
    table = rng.standard_normal((args.rows, 10), dtype=np.float32)
    vectors = rng.standard_normal((args.rows, 128), dtype=np.float32)
    queries = rng.standard_normal((args.queries, 128), dtype=np.float32)
    paths = {n: os.path.join(work, f"{n}.npy") for n in ("table", "vectors", "queries")}
    for name, a in (("table", table), ("vectors", vectors), ("queries", queries)):
        np.save(paths[name], a)

    subprocess.check_call(["cargo", "build", "-q", "--release", "--example", "array_bench"], cwd=ROOT)
    binary = os.path.join(ROOT, "target", "release", "examples", "array_bench")
    ours = json.loads(subprocess.check_output(
        [binary, os.path.join(work, "store"), paths["table"], paths["vectors"], paths["queries"]], cwd=ROOT))

    peer = {}
    npk_dir = os.path.join(work, "numpack")
    npk = NumPack(npk_dir, drop_if_exists=True)
    npk.open()
    # Each save starts with the page cache written back (the native side does the same).
    peer["save"] = median_ms(5, lambda: npk.save({"a": table}), os.sync)
    peer["load"] = median_ms(21, lambda: npk.load("a"))
    peer["lazy"] = median_ms(21, lambda: npk.load("a", lazy=True))
    new_rows = np.full((100, 10), 7, dtype=np.float32)
    seeds = iter(range(1, 1000))
    peer["replace_100"] = median_ms(21, lambda: npk.replace(
        {"a": new_rows}, np.random.default_rng(next(seeds)).integers(0, args.rows, 100)))
    peer["append_100"] = median_ms(21, lambda: npk.append({"a": new_rows}))
    for n in (100, 1000, 10_000):
        wanted = np.random.default_rng(n).integers(0, args.rows, n)
        peer[f"getitem_{n}"] = median_ms(21, lambda: npk.getitem("a", wanted))
    one_row = new_rows[:1]

    def small_200():
        at = np.random.default_rng(6).integers(0, args.rows, 100)
        for i in at:
            npk.replace({"a": one_row}, [int(i)])
            npk.append({"a": one_row})

    def batch_200():
        with npk.batch_mode():
            small_200()

    peer["small_200"] = median_ms(7, small_200)
    peer["batch_200"] = median_ms(7, batch_200)
    npk.save({"v": vectors})
    npk.close()
    search = StreamingVectorSearch()
    search.streaming_top_k_from_file(queries[0], npk_dir, "v", "l2", k=10)  # warm
    peer_ids = []
    times = []
    for q in queries:
        start = time.perf_counter()
        ids, _ = search.streaming_top_k_from_file(q, npk_dir, "v", "l2", k=10)
        times.append((time.perf_counter() - start) * 1e3)
        peer_ids.append([int(i) for i in ids])
    peer["topk_stream"] = sorted(times)[len(times) // 2]

    npy = os.path.join(work, "plain.npy")
    npy_save = median_ms(5, lambda: np.save(npy, table), os.sync)
    npy_load = median_ms(21, lambda: np.load(npy))
    npy_mmap = median_ms(21, lambda: np.load(npy, mmap_mode="r"))

    agree = sum(len(set(a) & set(b)) for a, b in zip(ours["ids"], peer_ids)) / (10 * args.queries)
    plain, durable = ours["plain"], ours["durable"]
    print(f"array store, {args.rows:,} x 10 f32 ({args.rows * 40 / 1e6:.0f} MB); top-10 over {args.rows:,} x 128 f32;"
          f" medians; NumPack {numpack.__version__}; {ours['threads']} threads")
    print(f"{'workload':28} {'ours ms':>10} {'NumPack ms':>11} {'ratio':>7} {'durable ms':>11}")
    rows = [("save", "save"), ("load (full copy)", "load"), ("lazy load (mmap)", "lazy"),
            ("replace 100 rows", "replace_100"), ("append 100 rows", "append_100"),
            ("getitem 100 random", "getitem_100"), ("getitem 1K random", "getitem_1000"),
            ("getitem 10K random", "getitem_10000"), ("100 x (1-row replace+append)", "small_200"),
            ("the same in batch mode", "batch_200")]
    for label, key in rows:
        print(f"{label:28} {plain[key]:10.4f} {peer[key]:11.4f} {plain[key] / peer[key]:7.3f} {durable[key]:11.4f}")
    print(f"{'streaming top-10, 1 query':28} {ours['topk_stream']:10.3f} {peer['topk_stream']:11.3f}"
          f" {ours['topk_stream'] / peer['topk_stream']:7.3f}"
          f"   (ours batched: {ours['topk_batched_per_query']:.3f} ms per query)")
    for label, key in (("the same rows as float16", "topk_f16_stream"), ("the same rows as int8", "topk_i8_stream")):
        print(f"{label:28} {ours[key]:10.3f} {'':11} {'':7}   ({ours[key] / ours['topk_stream']:.2f}x our float32 search)")
    print(f"{'vs NPY':28} {'ours ms':>10} {'NPY ms':>11} {'ratio':>7}")
    print(f"{'save':28} {plain['save']:10.3f} {npy_save:11.3f} {plain['save'] / npy_save:7.3f}")
    print(f"{'full load':28} {plain['load']:10.3f} {npy_load:11.3f} {plain['load'] / npy_load:7.3f}   (target <= 1.1)")
    print(f"{'lazy load / mmap':28} {plain['lazy']:10.4f} {npy_mmap:11.4f} {plain['lazy'] / npy_mmap:7.3f}")
    print(f"top-10 rows shared with NumPack: {agree:.3f}")
    print("command: python3 bench/array_store.py " + " ".join(a for a in sys.argv[1:] if a != "--inner"))


if __name__ == "__main__":
    main()
