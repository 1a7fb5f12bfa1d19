"""fastbook_bench's `evaluate` against pytrec_eval (trec_eval's C code) and ranx, on a run the size of MS MARCO dev.

A seeded synthetic run: --queries queries (7,000) of --depth documents (1,000) each, scores rounded to three decimals
(so that many documents tie, and trec_eval's tie-breaking by document id matters), 1-3 relevant documents per query
with graded labels 1-3 (most of them retrieved, scored higher than the others on average), and a judged non-relevant
(0) or negative (-1) document for some queries. Every library starts from the same Python dicts
`{query id: {doc id: score}}`:
- evaluate: `evaluate(qrels, run, METRICS, per_query=True)`, input checks included;
- pytrec_eval: building its `RelevanceEvaluator` and `evaluate(run)` for ndcg_cut.10, recall.100, map_cut.1000 and
  recip_rank (trec_eval has no cut recip_rank: timed on the whole run, which is the same work; the identity check of
  mrr@10 uses recip_rank on the run cut at 10 in trec_eval's order, untimed);
- ranx (if importable; not a dependency of the package): building its `Qrels` and `Run` from the dicts and `evaluate`
  (after one untimed call on a tiny run, so that numba's compilation is not counted).
- --baseline-commit C: the `evaluate` of `fastbook_bench/metrics.py` at git commit C, on the same run.
- --trec-eval PATH: from files, the run and the qrels written as TREC files (untimed): the trec_eval program at PATH
  (`trec_eval -m ndcg_cut.10 -m recall.100 -m map_cut.1000 -m recip_rank qrels run`) against the package reading the
  same files and scoring them: `evaluate_files` (the library function behind `fastbook-bench eval`) in this process,
  and the `fastbook-bench eval` command itself (a new process, as trec_eval's is). Each prints the means of the
  run's queries. The values are checked against trec_eval's per query (`-q`, mrr@10 as `-M 10 -m recip_rank`, both
  untimed) to the 4 decimals that trec_eval prints; the script exits with an error otherwise.
Each timing is the median of --repeat runs, after a garbage collection (building the run leaves one owed, which
would fall on whichever library is timed first). The values of `evaluate` must equal pytrec_eval's per query to
1e-12 (the script exits with an error otherwise); ranx's agreement is reported (it breaks ties otherwise).
Usage: python benchmarks/metrics_speed.py [--queries 7000] [--depth 1000] [--repeat 3] [--seed 0] [--baseline-commit C]
                                          [--trec-eval PATH]
Quick: python benchmarks/metrics_speed.py --queries 500 --repeat 1
"""
import argparse, gc, importlib.util, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np
import pytrec_eval
from fastbook_bench.metrics import evaluate
from fastbook_bench.measures import trec_order

METRICS = ['ndcg@10', 'mrr@10', 'recall@100', 'map@1000']
TREC = {'ndcg@10': 'ndcg_cut_10', 'recall@100': 'recall_100', 'map@1000': 'map_cut_1000'}

def synthetic(n_queries:int, depth:int, seed:int=0) -> tuple[dict, dict]:
    "A seeded `(qrels, run)`: `depth` documents a query, tied scores, 1-3 graded relevant documents, some 0/-1 labels."
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for i in range(n_queries):
        ids = rng.choice(8_841_823, size=depth + 4, replace=False)   # MS MARCO's passage ids
        docs, extra = [str(d) for d in ids[:depth]], [str(d) for d in ids[depth:]]
        scores = np.round(rng.normal(10, 2, depth), 3).tolist()       # ~1,000 values over ~12 points: many ties
        n_rel = int(rng.integers(1, 4))
        at = rng.choice(depth, n_rel, replace=False)                   # relevant, pushed up the ranking
        for j in at: scores[j] = round(float(rng.normal(13, 2)), 3)
        rel = [docs[j] if rng.random() < 0.85 else extra[i] for i, j in enumerate(at)]   # some not retrieved
        labels = {d: int(rng.integers(1, 4)) for d in rel}
        if rng.random() < 0.3: labels[docs[int(rng.integers(depth))]] = int(rng.choice([0, -1]))
        q = f'q{i}'
        qrels[q], run[q] = labels, dict(zip(docs, scores))
    return qrels, run

def timed(f, repeat:int) -> tuple[float, object]:
    "Median seconds of `repeat` calls of `f`, and its last result; first a garbage collection owed to earlier work."
    gc.collect()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter(); out = f(); times.append(time.perf_counter() - t0)
    return statistics.median(times), out

def with_pytrec_eval(qrels:dict, run:dict) -> dict:
    "The timed pytrec_eval call: evaluator built from the dicts, then the run evaluated."
    measures = {'ndcg_cut.10', 'recall.100', 'map_cut.1000', 'recip_rank'}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)

def trec_eval_values(qrels:dict, run:dict, timed_out:dict) -> dict:
    "`{query: {metric: value}}` from pytrec_eval, with mrr@10 as recip_rank of the run cut at 10 (trec_eval's order)."
    cut = {q: {d: docs[d] for d in trec_order(docs)[:10]} for q, docs in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {'recip_rank'}).evaluate(cut)
    return {q: {**{m: v[TREC[m]] for m in TREC}, 'mrr@10': rr[q]['recip_rank']} for q, v in timed_out.items()}

def with_ranx(qrels:dict, run:dict):
    "The timed ranx call, or None when ranx is not installed."
    from ranx import Qrels, Run, evaluate as ranx_evaluate
    r = Run(run)
    ranx_evaluate(Qrels(qrels), r, METRICS, make_comparable=True)
    return {q: {m: float(r.scores[m][q]) for m in METRICS} for q in r.scores[METRICS[0]]}

def baseline_evaluate(commit:str):
    "The `evaluate` of fastbook_bench/metrics.py at git `commit`."
    root = Path(__file__).resolve().parents[1]
    got = subprocess.run(['git', 'show', f'{commit}:fastbook_bench/metrics.py'], cwd=root, capture_output=True,
                         text=True)
    if got.returncode: sys.exit(f'--baseline-commit {commit}: {got.stderr.strip()}')
    src = got.stdout
    path = Path(tempfile.mkdtemp())/'metrics_baseline.py'
    path.write_text(src)
    spec = importlib.util.spec_from_file_location('fastbook_bench.metrics_baseline', path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod.evaluate

def write_trec(qrels:dict, run:dict, folder:Path) -> tuple[Path, Path]:
    "The qrels (`qid 0 doc label`) and the run (`qid Q0 doc rank score tag`, scores as repr) as TREC files in `folder`."
    q, r = folder/'qrels.txt', folder/'run.txt'
    q.write_text(''.join(f'{qid} 0 {d} {g}\n' for qid, rels in qrels.items() for d, g in rels.items()))
    with r.open('w') as f:
        for qid, docs in run.items(): f.write(''.join(f'{qid} Q0 {d} 0 {s!r} synthetic\n' for d, s in docs.items()))
    return q, r

def trec_eval_out(cmd:list) -> dict:
    "`{query (or 'all'): {measure: value}}` from the output of a trec_eval command."
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode: sys.exit(f'FAIL: {" ".join(map(str, cmd))}: {got.stderr.strip()}')
    out = {}
    for line in got.stdout.splitlines():
        m, q, v = line.split(); out.setdefault(q, {})[m] = float(v)
    return out

def timed_command(cmd:list, repeat:int) -> tuple[float, str]:
    "Median wall seconds of `repeat` runs of the command, and its last output."
    def once():
        got = subprocess.run(cmd, capture_output=True, text=True)
        if got.returncode: sys.exit(f'FAIL: {" ".join(map(str, cmd))}: {got.stderr.strip()[-2000:]}')
        return got.stdout
    return timed(once, repeat)

def from_files(trec_eval:str, qrels:dict, run:dict, repeat:int) -> dict:
    "trec_eval against `evaluate_files` and `fastbook-bench eval` on the same TREC files: `{name: seconds}`."
    from fastbook_bench.run_eval import evaluate_files   # the file readers and their imports, only when asked
    folder = Path(tempfile.mkdtemp(prefix='metrics_speed_'))
    try:
        t0 = time.perf_counter(); q, r = write_trec(qrels, run, folder)
        print(f'\nTREC files: {r.stat().st_size / 2**20:,.0f} MiB run, {q.stat().st_size / 2**20:,.1f} MiB qrels '
              f'(written in {time.perf_counter() - t0:.1f} s, untimed)')
        measures = ['-m', 'ndcg_cut.10', '-m', 'recall.100', '-m', 'map_cut.1000', '-m', 'recip_rank']
        cli = shutil.which('fastbook-bench', path=str(Path(sys.executable).parent)) or 'fastbook-bench'
        secs = {}
        secs['trec_eval program'], _ = timed_command([trec_eval, *measures, q, r], repeat)
        secs['evaluate_files'], ours = timed(lambda: evaluate_files(q, r, metrics=METRICS), repeat)
        secs['fastbook-bench eval'], printed = timed_command([cli, 'eval', '--qrels', q, '--run', r,
                                                              '--metrics', ','.join(METRICS)], repeat)
        te = trec_eval_out([trec_eval, '-q', *measures, q, r])            # untimed: the values, query by query
        rr = trec_eval_out([trec_eval, '-q', '-M', '10', '-m', 'recip_rank', q, r])
        te = {qid: {**{m: v[TREC[m]] for m in TREC}, 'mrr@10': rr[qid]['recip_rank']} for qid, v in te.items()}
        per, means = ours['per_query'], ours['means']
        if sorted(per) != sorted(set(te) - {'all'}): sys.exit('FAIL: evaluate_files and trec_eval score other queries')
        diff = max(abs(per[qid][m] - te[qid][m]) for qid in per for m in METRICS)
        diff_all = max(abs(means[m] - te['all'][m]) for m in METRICS)
        print(f'evaluate_files vs trec_eval -q: {len(per):,} queries x {len(METRICS)} metrics, max |difference| '
              f'{diff:.2g} per query, {diff_all:.2g} for the means (trec_eval prints 4 decimals)')
        if max(diff, diff_all) > 5e-5 + 1e-12: sys.exit('FAIL: evaluate_files differs from trec_eval')
        if f"{means['ndcg@10']:.4f}" not in printed: sys.exit('FAIL: fastbook-bench eval printed other means')
        return secs
    finally: shutil.rmtree(folder, ignore_errors=True)

def max_diff(a:dict, b:dict) -> tuple[float, int]:
    "The largest absolute difference over all queries and metrics, and the number of queries that differ by > 1e-12."
    diffs = [max(abs(a[q][m] - b[q][m]) for m in METRICS) for q in a]
    return max(diffs), sum(d > 1e-12 for d in diffs)

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--queries', type=int, default=7000)
    p.add_argument('--depth', type=int, default=1000, help='documents per query')
    p.add_argument('--repeat', type=int, default=3, help='timed runs of each, median reported')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--baseline-commit', help='also time the evaluate of fastbook_bench/metrics.py at this git commit')
    p.add_argument('--no-ranx', action='store_true', help='leave ranx out even if it is installed')
    p.add_argument('--trec-eval', metavar='PATH', help='also time this trec_eval program and the package on TREC files')
    a = p.parse_args()
    if a.queries < 1 or a.depth < 10 or a.repeat < 1: p.error('--queries and --repeat must be >= 1, --depth >= 10')
    if a.trec_eval and not shutil.which(a.trec_eval): p.error(f'--trec-eval {a.trec_eval}: not an executable')
    old = baseline_evaluate(a.baseline_commit) if a.baseline_commit else None   # a bad commit fails before the work
    t0 = time.perf_counter()
    qrels, run = synthetic(a.queries, a.depth, a.seed)
    n_tied = sum(len(docs) - len(set(docs.values())) for docs in run.values())
    print(f'run: {len(run):,} queries x {a.depth:,} documents ({n_tied:,} tied with an earlier score), '
          f'{sum(len(r) for r in qrels.values()):,} judgements, made in {time.perf_counter() - t0:.1f} s')
    secs = {}
    secs['evaluate'], ours = timed(lambda: evaluate(qrels, run, METRICS, per_query=True), a.repeat)
    secs['pytrec_eval'], out = timed(lambda: with_pytrec_eval(qrels, run), a.repeat)
    ref = trec_eval_values(qrels, run, out)
    if sorted(ours) != sorted(ref): sys.exit(f'FAIL: evaluate scores {len(ours)} queries, pytrec_eval {len(ref)}')
    diff, n_diff = max_diff(ours, ref)
    print(f'evaluate vs pytrec_eval: {len(ours):,} queries x {len(METRICS)} metrics, max |difference| {diff:.3g}, '
          f'{n_diff} queries differ by more than 1e-12')
    if n_diff: sys.exit('FAIL: evaluate differs from trec_eval')
    if old:
        secs[f'evaluate at {a.baseline_commit}'], old_out = timed(lambda: old(qrels, run, METRICS, per_query=True),
                                                                   a.repeat)
        print(f'evaluate at {a.baseline_commit} vs now: max |difference| {max_diff(old_out, ours)[0]:.3g}')
    has_ranx = not a.no_ranx and importlib.util.find_spec('ranx') is not None
    if has_ranx:
        with_ranx({'q': {'d': 1}}, {'q': {'d': 1.0, 'e': 0.5}})   # numba compiles here, untimed
        secs['ranx'], rx = timed(lambda: with_ranx(qrels, run), a.repeat)
        common = [q for q in ours if q in rx]
        d, n = max_diff({q: ours[q] for q in common}, rx)
        print(f'ranx vs evaluate: {len(common):,} queries compared, max |difference| {d:.3g}, {n:,} queries differ '
              f'by more than 1e-12 (ranx breaks ties otherwise)')
    else: print('ranx: left out' if a.no_ranx else 'ranx: not installed, left out (pip install ranx to include it)')
    files = from_files(a.trec_eval, qrels, run, a.repeat) if a.trec_eval else {}
    print(f'\nseconds (median of {a.repeat}), {", ".join(METRICS)}:')
    for name, s in secs.items():
        print(f'  {name:<28} {s:7.3f} s   pytrec_eval / this = {secs["pytrec_eval"] / s:5.2f}x')
    if files: print(f'from TREC files ({len(run):,} queries x {a.depth:,} documents):')
    for name, s in files.items():
        print(f'  {name:<28} {s:7.3f} s   trec_eval / this = {files["trec_eval program"] / s:5.2f}x')

if __name__ == '__main__': main()
