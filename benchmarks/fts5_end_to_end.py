"""FTS5 end to end, fastbook-bench against the published pipeline, run side by side.

Times whole processes (start to summary written), median of --repeat runs:
- reference: benchmarks/reference_fts5.py (RAGatouille CorpusProcessor + sqlite3 + the published scorer);
- cold: `fastbook-bench run --methods fts5` with an empty cache folder;
- warm: the same command again with the cache it filled.
Then times scoring one 191-question run in-process: the published scorer vs `score_rows` (normaliser cache empty, then warm).
Checks that both pipelines retrieve the same passages for every question. Prints the ratios.
Usage: python benchmarks/fts5_end_to_end.py [--data DIR] [--repeat 5]
"""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

here = Path(__file__).parent

def timed(cmd, env):
    "Wall-clock seconds of `cmd` and its stdout."
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode: sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return time.perf_counter() - t, r.stdout

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', default=os.environ.get('FASTBOOK_BENCH_DATA', str(here.parent.parent/'shared/fastbook-benchmark')))
    p.add_argument('--repeat', type=int, default=5)
    a = p.parse_args()
    env = dict(os.environ, FASTBOOK_BENCH_DATA=a.data, HF_HUB_OFFLINE='1')
    ref, cold, warm = [], [], []
    for i in range(a.repeat):
        t, out = timed([sys.executable, str(here/'reference_fts5.py'), a.data], env); ref.append(t); ref_out = json.loads(out)
        cache, res = tempfile.mkdtemp(), tempfile.mkdtemp()
        e = dict(env, FASTBOOK_BENCH_CACHE=cache)
        cmd = ['fastbook-bench', 'run', '--methods', 'fts5', '--no-progress', '--out', res]
        cold.append(timed(cmd, e)[0])
        warm.append(timed(cmd, e)[0])
    rows = list(csv.DictReader(open(Path(res)/'per_question.csv')))
    same = sum(json.loads(r['passages']) == p for r, p in zip(rows, ref_out['results']))
    ours = sum(float(r['mrr_at_10']) for r in rows), sum(float(r['recall_at_10']) for r in rows)

    sys.path.insert(0, str(here.parent))
    from fastbook_bench.documents import load_benchmark
    from fastbook_bench.scoring import score_rows, normalize
    questions = load_benchmark(a.data)
    def score_time(clear):
        ts = []
        for _ in range(a.repeat):
            if clear: normalize.cache_clear()
            t = time.perf_counter(); score_rows(questions, ref_out['results']); ts.append(time.perf_counter() - t)
        return statistics.median(ts)
    s_cold, s_warm = score_time(True), score_time(False)

    med = statistics.median
    print(f"runs: {a.repeat} (median); same passages as the published pipeline for {same}/{len(rows)} questions")
    print(f"MRR@10 / Recall@10 sums: reference {ref_out['mrr_sum']} / {ref_out['recall_sum']}, fastbook-bench {ours[0]:.5f} / {ours[1]:.5f}")
    print(f"reference pipeline     {med(ref):6.2f} s  (import {ref_out['import_s']:.2f}, chunk {ref_out['chunk_s']:.2f}, "
          f"search {ref_out['search_s']:.3f}, score {ref_out['score_s']:.2f})")
    print(f"fastbook-bench cold    {med(cold):6.2f} s  {med(ref) / med(cold):5.1f}x faster")
    print(f"fastbook-bench warm    {med(warm):6.2f} s  {med(ref) / med(warm):5.1f}x faster")
    print(f"scoring one run: reference {ref_out['score_s'] * 1000:.0f} ms, ours {s_cold * 1000:.1f} ms cold "
          f"({ref_out['score_s'] / s_cold:.0f}x), {s_warm * 1000:.2f} ms warm ({ref_out['score_s'] / s_warm:.0f}x)")

if __name__ == '__main__': main()
