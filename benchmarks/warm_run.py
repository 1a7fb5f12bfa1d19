"""Warm runs: `fastbook-bench run --methods colbert` and the default run, everything cached, whole processes.

Each run is a fresh process (interpreter start, imports, reading the cache, scoring, writing the summary), timed from
start to exit. The cache (FASTBOOK_BENCH_CACHE, a temporary folder) is filled first by an untimed run of each command.
With --before DIR (a checkout of the code to compare, put first on PYTHONPATH), the old and the new code run in
alternation, their order reversed every other round, each with a cache of its own filled the same way, and their
output files are compared byte for byte. Prints every round, the median and whether it meets issue 43's target.
Usage: python benchmarks/warm_run.py [--repeat 5] [--before /work/before43] [--data DIR]
Quick: python benchmarks/warm_run.py --repeat 1 --runs colbert
"""
import argparse, filecmp, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

RUNS = {'colbert': ['--methods', 'colbert'], 'default': []}
TARGETS = {'colbert': 5.0, 'default': 8.0}  # issue 43: the warm runs' medians, seconds

def run(cmd, env) -> float:
    "Wall-clock seconds of `cmd` (exits on failure)."
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=env['FASTBOOK_BENCH_CACHE'])  # not the checkout
    if r.returncode: sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return time.perf_counter() - t

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--repeat', type=int, default=5)
    p.add_argument('--before', default=None, help='a checkout of the code to compare with (run on PYTHONPATH)')
    p.add_argument('--data', default=os.environ.get('FASTBOOK_BENCH_DATA'), help='fastbook-benchmark folder')
    p.add_argument('--runs', default='colbert,default', help=f"which warm runs: {', '.join(RUNS)}")
    a = p.parse_args()
    here = str(Path(__file__).resolve().parents[1])
    sides = {'after': here} | ({'before': str(Path(a.before).resolve())} if a.before else {})
    cli = [sys.executable, '-c', 'import sys; from fastbook_bench.cli import main; sys.exit(main())', 'run', '--no-progress']
    base = dict(os.environ, HF_HUB_OFFLINE='1', **({'FASTBOOK_BENCH_DATA': a.data} if a.data else {}))
    base.pop('PYTHONDONTWRITEBYTECODE', None)
    with tempfile.TemporaryDirectory() as tmp:
        env = {s: dict(base, PYTHONPATH=src, FASTBOOK_BENCH_CACHE=f'{tmp}/cache-{s}') for s, src in sides.items()}
        for e in env.values(): os.makedirs(e['FASTBOOK_BENCH_CACHE'])
        for name in a.runs.split(','):
            cmd = lambda s: cli + RUNS[name] + ['--out', f'{tmp}/{name}-{s}']
            for s in sides: run(cmd(s), env[s])                     # fill the caches, untimed
            times = {s: [] for s in sides}
            for r in range(a.repeat):
                for s in (list(sides) if r % 2 == 0 else list(sides)[::-1]): times[s].append(run(cmd(s), env[s]))
            for s, ts in times.items():
                print(f"warm {name:8s} {s:6s} median {statistics.median(ts):6.2f} s  rounds: " + ' '.join(f'{t:.2f}' for t in ts))
            met = statistics.median(times['after']) <= TARGETS[name]
            print(f"warm {name:8s} target <= {TARGETS[name]:g} s: {'met' if met else 'NOT met'}")
            if 'before' in sides:
                same = [f for f in ('summary.csv', 'per_question.csv')
                        if filecmp.cmp(f'{tmp}/{name}-after/{f}', f'{tmp}/{name}-before/{f}', shallow=False)]
                b, n = (statistics.median(times[s]) for s in ('before', 'after'))
                print(f"warm {name:8s} {b / n:.2f}x faster; byte-identical: {', '.join(same) or 'none'}")

if __name__ == '__main__': main()
