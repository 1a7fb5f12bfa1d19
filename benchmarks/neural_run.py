"""Single-vector and ColBERT: the package's retrievers against the libraries they wrap, used directly, side by side.

On the fastbook chunks (chunk size 500; --passages N keeps the first N), with the bundled offline models on the CPU.
What belongs to the process rather than to encoding is paid before anything is compared, and printed apart: the
imports (torch, sentence-transformers, RAGatouille, the package's modules; seconds that a side timed from a fresh
interpreter would carry, the package's side on its first retriever, which imports sentence-transformers), and a
warm-up, each side once (the first model load and encoding). Then each side is timed from loading its model to
the top 10 of every question (searched over all passages), best of --repeat rounds, the sides in the opposite order
every other round, garbage collected between calls:
- single_vector: sentence-transformers used directly (load, encode, numpy cosine, argsort) against
  `SingleVectorRetriever` with no cache, and again with its encodings cached;
- colbert: RAGatouille used directly (load, `encode`, `search_encoded_docs` per question) against `ColBERTRetriever`
  with no cache, and again with its encodings cached;
and checked to return the same passages. Then whole processes, with their peak RSS (/usr/bin/time):
`fastbook-bench run --methods single_vector,colbert` with an empty cache and again with it filled, and (--full-run)
the default run of all four methods with an empty cache.
Usage: python benchmarks/neural_run.py [--data DIR] [--repeat 3] [--full-run]
Quick: python benchmarks/neural_run.py --passages 40 --repeat 1 --run-methods fts5
"""
import argparse, contextlib, gc, io, os, subprocess, sys, tempfile, time, warnings
import numpy as np

@contextlib.contextmanager
def clock(times:dict, what:str):
    "Put the seconds the block takes in `times[what]`."
    t = time.perf_counter()
    yield
    times[what] = time.perf_counter() - t

def timed(f):
    "Seconds of `f()` (after collecting what earlier calls left, outside the timing), and its result."
    gc.collect()
    t = time.perf_counter(); out = f()
    return time.perf_counter() - t, out

def best_s(fs, repeat:int):
    "Best seconds of each of `fs` over `repeat` rounds, in the opposite order every other round; each one's last result."
    ts, out = [[] for _ in fs], [None] * len(fs)
    for r in range(repeat):
        for i in (range(len(fs)) if r % 2 == 0 else reversed(range(len(fs)))):
            t, out[i] = timed(fs[i]); ts[i].append(t)
    return [min(t) for t in ts], out

@contextlib.contextmanager
def quiet():
    "Silence RAGatouille's and colbert-ai's prints and warnings."
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter('ignore')
        yield

def same_top10(a, b) -> int:
    "How many queries have the same top 10 (as sets: ties may be ordered differently) in `a` and `b`."
    return sum(set(x) == set(y) for x, y in zip(a, b))

def side_by_side(name, baseline, package, cached, repeat, n):
    "Time the three ways, print them and how far they agree."
    (tb, tp, tc), (rb, rp, rc) = best_s((baseline, package, cached), repeat)
    print(f"{name:14s} library directly {tb:6.1f} s   package {tp:6.1f} s ({tb / tp:4.2f}x)   "
          f"package, cached {tc:6.1f} s ({tb / tc:5.1f}x)   same top 10: {same_top10(rb, rp)}/{n}, "
          f"cached {same_top10(rp, rc)}/{n}")

def warm_up(name, baseline, package):
    "Each side once before the comparison (first model load and encoding; the package fills its cache), timed apart."
    (tb, _), (tp, _) = timed(baseline), timed(package)
    print(f"{name:14s} warm-up, first calls: library directly {tb:6.1f} s   package, filling its cache {tp:6.1f} s")

def run(cmd, env):
    "Wall seconds and peak RSS (MB) of `cmd`."
    with tempfile.NamedTemporaryFile('r') as f:
        t = time.perf_counter()
        r = subprocess.run(['/usr/bin/time', '-o', f.name, '-f', '%M', *cmd], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if r.returncode: sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
        return wall, int(f.read().split()[-1]) / 1024

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', default=None, help='fastbook-benchmark folder (default: FASTBOOK_BENCH_DATA, then the cache)')
    p.add_argument('--passages', type=int, default=0, help='use only the first N chunks (0: all)')
    p.add_argument('--repeat', type=int, default=3)
    p.add_argument('--no-runs', action='store_true', help='skip the whole-process runs')
    p.add_argument('--run-methods', default='single_vector,colbert', help='methods of the timed empty-cache/cached run')
    p.add_argument('--full-run', action='store_true', help='also time the default run of all four methods')
    a = p.parse_args()
    tmp = tempfile.TemporaryDirectory()
    os.environ.update(HF_HUB_OFFLINE='1', FASTBOOK_BENCH_CACHE=f'{tmp.name}/cache')
    imports = {}                                             # paid here, before any timing, by both sides
    with clock(imports, 'torch'): import torch
    with clock(imports, 'sentence-transformers'): from sentence_transformers import SentenceTransformer
    with clock(imports, 'RAGatouille'), quiet(): from ragatouille import RAGPretrainedModel
    with clock(imports, 'fastbook_bench'):
        from fastbook_bench.chunking import build_corpus
        from fastbook_bench.colbert import BUNDLED_COLBERT, ColBERTRetriever, bundled_colbert_checkpoint
        from fastbook_bench.data import data_dir, load_benchmark
        from fastbook_bench.models import BUNDLED_MODEL, bundled_model_path
        from fastbook_bench.scoring import question_queries
        from fastbook_bench.single_vector import SingleVectorRetriever
    data = data_dir(a.data)
    passages = build_corpus(data, chunk_size=500).passages
    passages, queries = passages[:a.passages or len(passages)], question_queries(load_benchmark(data))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, cpu; {len(passages)} passages (chunk size 500), "
          f"{len(queries)} queries; best of {a.repeat}, the sides' order reversed every other round")
    print("imports, paid before any timing: " + ", ".join(f"{k} {v:.1f} s" for k, v in imports.items()))
    ids = lambda res: [[i for i, _ in r] for r in res]

    def st_direct():
        st = SentenceTransformer(str(bundled_model_path()), device='cpu')
        enc = lambda xs: st.encode(xs, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        return np.argsort(-(enc(queries) @ enc(passages).T), axis=1, kind='stable')[:, :10].tolist()
    sv = lambda cache: lambda: ids(SingleVectorRetriever(passages, model='bundled', device='cpu', cache=cache).search(queries))
    warm_up('single_vector', st_direct, sv(True))
    side_by_side('single_vector', st_direct, sv(False), sv(True), a.repeat, len(queries))

    def rag_direct():
        with quiet():
            rag = RAGPretrainedModel.from_pretrained(str(bundled_colbert_checkpoint()), verbose=0)
            rag.encode(passages, bsize=32, verbose=False)
            return [[r['result_index'] for r in rag.search_encoded_docs(query=q, k=10, bsize=32)] for q in queries]
    def cb(cache):
        def f():
            with quiet(): return ids(ColBERTRetriever(passages, model=BUNDLED_COLBERT, cache=cache).search(queries))
        return f
    warm_up('colbert', rag_direct, cb(True))
    side_by_side('colbert', rag_direct, cb(False), cb(True), a.repeat, len(queries))

    if not a.no_runs:
        cli = [sys.executable, '-c', 'import sys; from fastbook_bench.cli import main; sys.exit(main())', 'run']
        env = dict(os.environ, FASTBOOK_BENCH_DATA=str(data), FASTBOOK_BENCH_CACHE=f'{tmp.name}/run-cache')
        cmd = cli + ['--methods', a.run_methods, '--no-progress', '--out', f'{tmp.name}/results']
        (w1, m1), (w2, m2) = run(cmd, env), run(cmd, env)
        print(f"run {a.run_methods}: empty cache {w1:.1f} s ({m1:.0f} MB peak), cached {w2:.1f} s ({m2:.0f} MB): "
              f"{w1 / w2:.1f}x faster")
        if a.full_run:
            env = dict(env, FASTBOOK_BENCH_CACHE=f'{tmp.name}/full-cache')
            w, m = run(cli + ['--no-progress', '--out', f'{tmp.name}/results'], env)
            print(f"default full run (4 methods, empty cache): {w:.1f} s, peak RSS {m:.0f} MB")
    tmp.cleanup()

if __name__ == '__main__': main()
