"""A sweep on 2 threads against the same sweep on 1, in alternating rounds (the project's
habit: a baseline measured in the same run), with the ratio. Not a test: it measures.

    python3 python/bench/sweep_jobs.py [--seeds 64] [--rounds 3] [--scenario NAME] [--duration D]

Prints one line per round and a last line `sweep_jobs ratio=… ` (1 thread's time over 2
threads'), and checks that both give the same rows.
"""

import argparse
import os
import statistics
import time

import resim


def timed(scenario, seeds, jobs):
    start = time.perf_counter()
    table = resim.sweep(scenario, seeds=range(1, seeds + 1), jobs=jobs)
    return time.perf_counter() - start, table


def rows(table):
    return table if isinstance(table, list) else table.to_dict("records")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default="retry-storm-budget")
    parser.add_argument("--duration", default=None, help="each run's simulated duration, e.g. 20s")
    args = parser.parse_args()
    sets = {"duration": args.duration} if args.duration else {}
    scenario = resim.load(args.scenario, set=sets)
    print(f"{args.scenario}, {args.seeds} seeds, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    ones, twos = [], []
    for round in range(args.rounds):
        one, a = timed(scenario, args.seeds, 1)
        two, b = timed(scenario, args.seeds, 2)
        assert rows(a) == rows(b), "jobs=1 and jobs=2 gave different rows"
        ones.append(one)
        twos.append(two)
        print(f"round {round + 1}: jobs=1 {one:.2f}s  jobs=2 {two:.2f}s  ratio {one / two:.2f}  (load {os.getloadavg()[0]:.1f})")
    ratio = statistics.median(o / t for o, t in zip(ones, twos))
    print(f"sweep_jobs ratio={ratio:.2f} jobs1_s={statistics.median(ones):.2f} jobs2_s={statistics.median(twos):.2f}")


if __name__ == "__main__":
    main()
