#!/usr/bin/env python3
"""Write models/demo_mlp.zipf.txt: a Zipf shape trace for the demo model (input x [N, 64]).

The trace format and the distribution follow ../shared/bench/shape_traces.py: one request per
line, `x=Nx64`; batch sizes drawn from a small ranked set with P(rank k) ~ 1/k^s, s = 1.2, so a
few shapes dominate and a tail appears rarely. The output is deterministic (seeded RNG).

Usage:
    python3 scripts/make_demo_trace.py                  # writes models/demo_mlp.zipf.txt
    python3 scripts/make_demo_trace.py --requests 100 --out /tmp/t.txt
Needs only the Python standard library.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZIPF_S = 1.2
# Batch sizes in 1..64, most popular first (the rank order used for mlp in shape_traces.py).
BATCHES = (1, 8, 32, 4, 64, 16, 2)
FEATURES = 64


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "demo_mlp.zipf.txt"),
                    help="output file (default: %(default)s)")
    ap.add_argument("--requests", type=int, default=500, help="requests (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=20240601, help="base seed (default: %(default)s)")
    args = ap.parse_args()
    if args.requests < 1:
        ap.error("--requests must be >= 1")

    rng = random.Random(args.seed ^ zlib.crc32(b"demo_mlp.zipf"))
    weights = [1.0 / (k ** ZIPF_S) for k in range(1, len(BATCHES) + 1)]
    batches = rng.choices(BATCHES, weights=weights, k=args.requests)
    counts = collections.Counter(batches)
    with open(args.out, "w") as f:
        f.write(f"# demo_mlp Zipf trace: {args.requests} requests, x=Nx{FEATURES}, N in {list(BATCHES)} "
                f"with P(rank k) ~ 1/k^{ZIPF_S}\n")
        f.write(f"# written by scripts/make_demo_trace.py --requests {args.requests} --seed {args.seed}\n")
        f.writelines(f"x={b}x{FEATURES}\n" for b in batches)
    print(f"wrote {args.out}: " + ", ".join(f"x={b}x{FEATURES} x{c}" for b, c in counts.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
