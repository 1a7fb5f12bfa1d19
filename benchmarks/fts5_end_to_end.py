"""FTS5 end to end, fastbook-bench against the published pipeline, run side by side.

Times whole processes (start to summary written), median of --repeat runs:
- reference: benchmarks/reference_fts5.py (RAGatouille CorpusProcessor + sqlite3 + the published scorer);
- cold: `fastbook-bench run --methods fts5` with an empty cache folder;
- warm: the same command again with the cache it filled.
Then times scoring one 191-question run in-process: the published scorer vs `score_rows` with no normalisation cache,
with the corpus's normalised passages read from the disk cache, and with everything already in memory.
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
    os.environ['FASTBOOK_BENCH_CACHE'] = cache  # the cache the last cold/warm pair filled
    from fastbook_bench.documents import load_benchmark, build_corpus
    from fastbook_bench.scoring import score_rows, normalize_all, _fixed
    questions, corpus = load_benchmark(a.data), build_corpus(a.data)
    def score_time(prepare):
        ts = []
        for _ in range(a.repeat):
            _fixed.clear()
            t = time.perf_counter(); prepare(); score_rows(questions, ref_out['results']); ts.append(time.perf_counter() - t)
        return statistics.median(ts)
    s_cold = score_time(lambda: None)                                   # ftfy on every text
    s_disk = score_time(lambda: normalize_all(corpus.passages))        # passages' normal forms read from the cache
    normalize_all(corpus.passages)
    ts = []
    for _ in range(a.repeat):
        t = time.perf_counter(); score_rows(questions, ref_out['results']); ts.append(time.perf_counter() - t)
    s_warm = statistics.median(ts)                                      # everything already normalised in memory

    med = statistics.median
    print(f"runs: {a.repeat} (median); same passages as the published pipeline for {same}/{len(rows)} questions")
    print(f"MRR@10 / Recall@10 sums: reference {ref_out['mrr_sum']} / {ref_out['recall_sum']}, fastbook-bench {ours[0]:.5f} / {ours[1]:.5f}")
    print(f"reference pipeline     {med(ref):6.2f} s  (import {ref_out['import_s']:.2f}, chunk {ref_out['chunk_s']:.2f}, "
          f"search {ref_out['search_s']:.3f}, score {ref_out['score_s']:.2f})")
    print(f"fastbook-bench cold    {med(cold):6.2f} s  {med(ref) / med(cold):5.1f}x faster")
    print(f"fastbook-bench warm    {med(warm):6.2f} s  {med(ref) / med(warm):5.1f}x faster")
    r = ref_out['score_s']
    print(f"scoring one run: reference {r * 1000:.0f} ms; ours {s_cold * 1000:.1f} ms with no cache ({r / s_cold:.0f}x), "
          f"{s_disk * 1000:.1f} ms with the corpus's normal forms cached on disk ({r / s_disk:.0f}x), "
          f"{s_warm * 1000:.2f} ms in memory ({r / s_warm:.0f}x)")

if __name__ == '__main__': main()
