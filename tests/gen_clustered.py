#!/usr/bin/env python3
"""Clustered synthetic vectors for the HNSW recall test and benchmark, from a fixed seed.

    python3 tests/gen_clustered.py [--rows 100000] [--dim 768] [--queries 200] [--seed 42] OUT_DIR

Writes OUT_DIR/vectors-<rows>x<dim>.f32 and OUT_DIR/queries-<queries>x<dim>.f32 (little-endian
f32, row after row) and prints their paths. The same arguments always give the same bytes.

The set is shaped like real embeddings: 100 clusters of different sizes, each spread along its
own 24 directions (embeddings have a low intrinsic dimension; isotropic noise in 768 dimensions
would make every neighbour almost equally far, which no real corpus looks like), plus a little
isotropic noise. Queries are fresh draws from the same clusters, not rows of the set.
"""
import argparse
import os

import numpy as np

CLUSTERS = 100
LATENT = 24


def draw(rng, centres, bases, weights, count, dim):
    cluster = rng.choice(CLUSTERS, size=count, p=weights)
    coefficients = rng.standard_normal((count, LATENT), dtype=np.float32)
    out = np.empty((count, dim), dtype=np.float32)
    for start in range(0, count, 10_000):
        c = cluster[start:start + 10_000]
        spread = np.einsum("nl,nld->nd", coefficients[start:start + 10_000], bases[c])
        noise = 0.05 * rng.standard_normal((len(c), dim), dtype=np.float32)
        out[start:start + 10_000] = centres[c] + spread + noise
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("out")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    centres = rng.standard_normal((CLUSTERS, args.dim), dtype=np.float32)
    # Each cluster's directions, scaled so a cluster is about as wide as centres are apart.
    bases = rng.standard_normal((CLUSTERS, LATENT, args.dim), dtype=np.float32) * np.float32(0.25)
    weights = rng.uniform(0.5, 1.5, CLUSTERS)
    weights /= weights.sum()
    os.makedirs(args.out, exist_ok=True)
    vectors = os.path.join(args.out, f"vectors-{args.rows}x{args.dim}.f32")
    queries = os.path.join(args.out, f"queries-{args.queries}x{args.dim}.f32")
    draw(rng, centres, bases, weights, args.rows, args.dim).astype("<f4").tofile(vectors)
    draw(rng, centres, bases, weights, args.queries, args.dim).astype("<f4").tofile(queries)
    print(vectors)
    print(queries)


if __name__ == "__main__":
    main()
