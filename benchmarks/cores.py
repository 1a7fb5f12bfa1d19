"""Every core: queries/s of `Index.search` over a BM25 and an FTS5 index on one core and on all, and their ratio; the
seconds of a BM25 build on one core and on all.

The corpus and its two query sets (selective, frequent-word) are `bm25_peers.py`'s seeded synthetic ones (written
with its `corpus` step if --dir does not hold them yet). Each index is built once; then, for each core count t, a fresh
process pinned to t cores (`os.sched_setaffinity`, with NUMBA_NUM_THREADS and OMP_NUM_THREADS = t) opens it and
searches every query of a set as one batch at k = 10: the best of --repeats after one warm-up pass. The results of one
and of all cores must be equal (the script exits with an error otherwise). A BM25 build is timed the same way, in a
fresh process pinned to t cores with `processes=t`, the best of --repeats; its files must be those of the first build.
Usage: python benchmarks/cores.py [--passages 200000] [--methods bm25 fts5] [--repeats 3] [--dir DIR]
Quick: python benchmarks/cores.py --passages 20000
Without --dir, everything goes to a new temporary folder, removed at the end.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETS = ('selective', 'frequent')

def search(a) -> dict:
    "In this process, pinned to `a.cores` cores: queries/s of each set, and the rows found."
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:a.cores]))
    from fastbook_bench.index import open_index
    d = Path(a.dir); idx = open_index(d/f'index-{a.method}'); out = {}
    for name in SETS:
        qs = [json.loads(l)['text'] for l in open(d/f'queries_{name}.jsonl')]
        idx.search(qs, 10); best = float('inf')
        for _ in range(a.repeats):
            t = time.perf_counter(); got = idx.search(qs, 10); best = min(best, time.perf_counter() - t)
        out[name] = dict(qps=len(qs) / best, rows=[[r for r, _ in x] for x in got])
    return out

def build(a) -> dict:
    "In this process, pinned to `a.cores` cores: the best seconds of a BM25 build with `processes=a.cores`, its files."
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:a.cores]))
    from fastbook_bench.index import build_index
    d, best = Path(a.dir), float('inf')
    for _ in range(a.repeats):
        out = d/f'build-{a.cores}'; shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter(); build_index(d/'corpus.jsonl', out, method='bm25', processes=a.cores)
        best = min(best, time.perf_counter() - t)
    files = json.loads((out/'manifest.json').read_text())['files']; shutil.rmtree(out)
    return dict(seconds=best, files=files)

def child(a, method:str, cores:int, step:str='search') -> dict:
    "`step` (search, build) in a fresh process with `cores` cores."
    env = dict(os.environ, NUMBA_NUM_THREADS=str(cores), OMP_NUM_THREADS=str(cores))
    cmd = [sys.executable, __file__, step, '--dir', a.dir, '--method', method, '--cores', str(cores),
           '--repeats', str(a.repeats)]
    return json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('step', nargs='?', choices=['search', 'build'])
    p.add_argument('--passages', type=int, default=200_000)
    p.add_argument('--methods', nargs='+', default=['bm25', 'fts5'])
    p.add_argument('--method'); p.add_argument('--cores', type=int)
    p.add_argument('--repeats', type=int, default=3)
    p.add_argument('--dir', help='corpus and indexes (kept); default: a temporary folder')
    a = p.parse_args()
    if a.step: return print(json.dumps((search if a.step == 'search' else build)(a)))
    tmp = None if a.dir else tempfile.mkdtemp()
    a.dir = a.dir or tmp; d = Path(a.dir); d.mkdir(parents=True, exist_ok=True)
    try:
        if not (d/'corpus.jsonl').exists():
            subprocess.run([sys.executable, str(HERE/'bm25_peers.py'), 'corpus', '--dir', str(d), '--passages',
                            str(a.passages)], check=True)
        from fastbook_bench.index import build_index
        n_cores = len(os.sched_getaffinity(0))
        print(f"{sum(1 for _ in open(d/'corpus.jsonl')):,} passages, {n_cores} cores")
        print('| method | queries | q/s 1 core | q/s all cores | ratio |\n|---|---|---|---|---|')
        for m in a.methods:
            if not (d/f'index-{m}').exists(): build_index(d/'corpus.jsonl', d/f'index-{m}', method=m)
            one, all_ = child(a, m, 1), child(a, m, n_cores)
            for name in SETS:
                if one[name]['rows'] != all_[name]['rows']: sys.exit(f"{m} {name}: results differ with {n_cores} cores")
                r1, rn = one[name]['qps'], all_[name]['qps']
                print(f"| {m} | {name} | {r1:,.0f} | {rn:,.0f} | {rn / r1:.2f} |", flush=True)
        if 'bm25' in a.methods:
            one, all_ = child(a, 'bm25', 1, 'build'), child(a, 'bm25', n_cores, 'build')
            if one['files'] != all_['files']: sys.exit(f"bm25 build: files differ with {n_cores} cores")
            print(f"\n| build | s 1 core | s all cores | ratio |\n|---|---|---|---|\n"
                  f"| bm25 | {one['seconds']:.2f} | {all_['seconds']:.2f} | {one['seconds'] / all_['seconds']:.2f} |")
    finally:
        if tmp: shutil.rmtree(tmp, ignore_errors=True)

if __name__ == '__main__': main()
