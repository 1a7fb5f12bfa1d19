"""Retrieval at scale on one machine: the package's BM25 with the bm25s backend against rank-bm25, and the package's
exact dense search against faiss HNSW and IVF, on seeded synthetic collections.

Each step runs in its own process, so its peak memory (ru_maxrss) is its own:
- corpus: a seeded synthetic collection written as a BEIR folder with `write_dataset`: Zipf-distributed English words
  (MiniLM's whole-word vocabulary, one token each), passages of 20-80 words (dense: 8-20), each query four words of
  one passage (its two rarest and two others), that passage being its one relevant document;
- bm25: `load_dataset` (streamed), `BM25Retriever(backend=...)` indexing time, queries/s (rank-bm25: on a sample),
  memory, Recall@10 and nDCG@10 against the synthetic qrels (`evaluate`), and the top 10 of the first queries so that
  the two backends can be compared;
- dense: `SingleVectorRetriever` (bundled MiniLM, exact search) on as many passages as it encodes within --budget-s,
  then faiss HNSW and IVF built on its vectors: build time, latency per query (one query at a time, vectors given)
  and Recall@10 against the package's exact search.
Usage: python benchmarks/scale.py [--out DIR] [--sizes 100000,1000000] [--dense-n 100000] [--budget-s 600]
       python benchmarks/scale.py STEP --n N --dir DIR [...]                      (one step; prints its JSON)
Quick: python benchmarks/scale.py --sizes 5000 --dense-n 3000 --budget-s 20
Without --out, the collections go to a new temporary folder, removed at the end.
"""
import argparse, json, os, re, resource, shutil, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np

def rss_mb() -> float:
    "Resident memory of this process now, in MB."
    import psutil
    return psutil.Process().memory_info().rss / 2**20

def peak_mb() -> float:
    "Peak resident memory of this process so far, in MB."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def vocabulary() -> list[str]:
    "The lower-case words of 3+ letters in the bundled MiniLM's vocabulary, in its (roughly frequency) order."
    from fastbook_bench.models import bundled_model_path
    return [w for w in (bundled_model_path()/'vocab.txt').read_text().split('\n') if re.fullmatch('[a-z]{3,}', w)]

def synthetic(n:int, seed:int=0, words=(20, 80), n_queries:int=1000):
    "A seeded collection: (passages, queries, the relevant passage of each query)."
    rng = np.random.default_rng(seed)
    vocab = np.array(vocabulary())
    p = 1 / np.arange(1, len(vocab) + 1) ** 1.07; p /= p.sum()
    lens = rng.integers(words[0], words[1] + 1, n)
    ids = rng.choice(len(vocab), lens.sum(), p=p).astype(np.int32)
    cuts = np.concatenate([[0], np.cumsum(lens)])
    passages = [' '.join(vocab[ids[cuts[i]:cuts[i + 1]]]) for i in range(n)]
    targets = rng.choice(n, min(n_queries, n), replace=False)
    queries = []
    for t in targets:
        w = np.unique(ids[cuts[t]:cuts[t + 1]])
        rare = w[np.argsort(-w)][:2]                     # higher id = rarer under Zipf
        other = rng.choice(w, min(2, len(w)), replace=False)
        queries.append(' '.join(vocab[np.concatenate([rare, other])]))
    return passages, queries, [int(t) for t in targets]

def step_corpus(a) -> dict:
    "Write the collection as a BEIR folder."
    from fastbook_bench.datasets import Dataset, write_dataset
    t = time.perf_counter()
    passages, queries, targets = synthetic(a.n, a.seed, tuple(map(int, a.words.split(','))))
    gen = time.perf_counter() - t
    ds = Dataset({f'p{i}': s for i, s in enumerate(passages)}, {f'q{i}': q for i, q in enumerate(queries)},
                 {f'q{i}': {f'p{t}': 1} for i, t in enumerate(targets)})
    t = time.perf_counter(); write_dataset(ds, a.dir)
    return dict(n=a.n, generate_s=gen, write_s=time.perf_counter() - t, words=float(np.mean([len(s.split()) for s in passages])),
                corpus_mb=(Path(a.dir)/'corpus.jsonl').stat().st_size / 2**20)

def step_bm25(a) -> dict:
    "Index and search with the package's BM25Retriever and one backend."
    from fastbook_bench.datasets import load_dataset
    from fastbook_bench.fts import BM25Retriever
    from fastbook_bench.metrics import evaluate
    from fastbook_bench.runs import to_run
    t = time.perf_counter(); ds = load_dataset(a.dir); read_s = time.perf_counter() - t
    ids, qids = list(ds.corpus), list(ds.queries)[:a.queries]
    passages = list(ds.corpus.values()); ds.corpus = None
    base = rss_mb()
    t = time.perf_counter(); r = BM25Retriever(passages, backend=a.backend); index_s = time.perf_counter() - t
    index_mb = rss_mb() - base
    qs = [ds.queries[q] for q in qids]
    t = time.perf_counter(); res = r.search(qs, k=10); search_s = time.perf_counter() - t
    m = evaluate({q: ds.qrels[q] for q in qids}, to_run(qids, ids, res), ['recall@10', 'ndcg@10'])
    return dict(n=len(passages), backend=a.backend, read_s=read_s, index_s=index_s, queries=len(qs), search_s=search_s,
                qps=len(qs) / search_s, index_rss_mb=index_mb, peak_rss_mb=peak_mb(), **m,
                top10=[[ids[i] for i, _ in x] for x in res[:a.compare]], scores=[[s for _, s in x] for x in res[:a.compare]])

def _latency(index, q:np.ndarray, k:int=10):
    "Mean seconds per single-query search, and the ids found for every query."
    out = []
    t = time.perf_counter()
    for v in q: out.append(index.search(v[None], k)[1][0])
    return (time.perf_counter() - t) / len(q), np.array(out)

def _recall(got:np.ndarray, truth:list[set]) -> float:
    "Mean share of the exact top 10 that an approximate index finds."
    return float(np.mean([len(set(g.tolist()) & t) / len(t) for g, t in zip(got, truth)]))

def step_dense(a) -> dict:
    "The package's exact single-vector search, then faiss HNSW and IVF on the same vectors."
    import faiss, torch
    from fastbook_bench.datasets import load_dataset
    from fastbook_bench.models import load_sentence_model
    from fastbook_bench.single_vector import SingleVectorRetriever
    ds = load_dataset(a.dir)
    passages, queries = list(ds.corpus.values())[:a.encode], list(ds.queries.values())[:a.queries]
    model, name = load_sentence_model('bundled', device='cpu')
    build = lambda ps: SingleVectorRetriever(ps, model=name, encoder=model, batch_size=64, index='faiss', cache=False)
    probe = passages[:min(200, len(passages))]   # its encoding rate decides how many passages fit the budget
    t = time.perf_counter(); build(probe); rate = len(probe) / (time.perf_counter() - t)
    n = min(len(passages), max(len(probe), int(rate * a.budget_s)))
    t = time.perf_counter(); r = build(passages[:n]); encode_s = time.perf_counter() - t
    t = time.perf_counter(); exact = r.search(queries, k=10); search_s = time.perf_counter() - t
    truth = [{i for i, _ in x} for x in exact]
    qv = model.encode(queries, batch_size=64, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
    res = dict(n=n, asked=len(passages), model=name, torch_threads=torch.get_num_threads(), queries=len(queries),
               faiss_threads=faiss.omp_get_max_threads(), encode_s=encode_s, passages_per_s=n / encode_s,
               search_qps=len(queries) / search_s)
    flat_s, flat_ids = _latency(r.faiss, qv)
    res['exact'] = dict(build_s=None, ms=flat_s * 1000, recall_vs_exact=_recall(flat_ids, truth))
    emb, d = r.embeddings, r.embeddings.shape[1]
    hnsw = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT); hnsw.hnsw.efConstruction = 40
    t = time.perf_counter(); hnsw.add(emb); hnsw_build = time.perf_counter() - t
    nlist = min(1024, max(1, n // 39))           # faiss wants 39+ training vectors per list
    ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
    t = time.perf_counter(); ivf.train(emb); ivf.add(emb); ivf_build = time.perf_counter() - t
    for kind, ix, knob, values, built in [('hnsw', hnsw, 'efSearch', (16, 64, 128), hnsw_build),
                                          (f'ivf{nlist}', ivf, 'nprobe', (8, 32), ivf_build)]:
        for v in values:
            if kind == 'hnsw': ix.hnsw.efSearch = v
            else: ix.nprobe = v
            s, got = _latency(ix, qv)
            res[f'{kind} {knob}={v}'] = dict(build_s=built, ms=s * 1000, recall_vs_exact=_recall(got, truth))
    res['peak_rss_mb'] = peak_mb()
    return res

STEPS = {'corpus': step_corpus, 'bm25': step_bm25, 'dense': step_dense}

def child(step:str, verbose:bool=True, **opts) -> dict:
    "Run one step in a fresh, niced process and return its JSON."
    cmd = ['nice', sys.executable, str(Path(__file__).resolve()), step]
    cmd += [x for k, v in opts.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    if verbose: print('$', ' '.join(cmd[1:]), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE='1'))
    if r.returncode: raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.splitlines()[-1])
    if verbose: print(json.dumps({k: v for k, v in out.items() if k not in ('top10', 'scores')}), file=sys.stderr, flush=True)
    return out

def bm25_study(n:int, out:Path, rank_bm25_queries:int=50, queries:int=1000, verbose:bool=True) -> dict:
    "Corpus, bm25s and rank-bm25 at `n` passages, and how far the two backends agree."
    d = Path(out)/f'beir-{n}'
    res = {}
    if not (d/'corpus.jsonl').is_file(): res['corpus'] = child('corpus', verbose, n=n, dir=d)
    fast = res['bm25s'] = child('bm25', verbose, n=n, dir=d, backend='bm25s', queries=queries, compare=rank_bm25_queries)
    slow = res['rank_bm25'] = child('bm25', verbose, n=n, dir=d, backend='rank_bm25', queries=rank_bm25_queries,
                                    compare=rank_bm25_queries)
    same = [f == s for f, s in zip(fast['top10'], slow['top10'])]
    diff = max(abs(x - y) for f, s in zip(fast['scores'], slow['scores']) for x, y in zip(f, s))
    res['agreement'] = dict(queries=len(same), same_top10=sum(same), max_score_diff=diff, speedup_qps=fast['qps'] / slow['qps'])
    for r in res.values(): r.pop('top10', None); r.pop('scores', None)
    return res

def dense_study(n:int, out:Path, budget_s:float=600, queries:int=1000, verbose:bool=True) -> dict:
    "A collection of short passages and the dense step on it."
    d = Path(out)/f'short-{n}'
    res = {}
    if not (d/'corpus.jsonl').is_file(): res['corpus'] = child('corpus', verbose, n=n, dir=d, words='8,20')
    res['dense'] = child('dense', verbose, n=n, dir=d, encode=n, queries=queries, budget_s=budget_s)
    return res

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('step', nargs='?', choices=list(STEPS), help='one step (default: all of them, each in its own process)')
    p.add_argument('--n', type=int, default=100_000); p.add_argument('--dir', default=None)
    p.add_argument('--seed', type=int, default=0); p.add_argument('--words', default='20,80')
    p.add_argument('--backend', default='bm25s'); p.add_argument('--queries', type=int, default=1000)
    p.add_argument('--compare', type=int, default=50); p.add_argument('--encode', type=int, default=100_000)
    p.add_argument('--budget-s', type=float, default=600)
    p.add_argument('--out', default=None, help='folder for the collections and scale.json (default: a temporary one)')
    p.add_argument('--sizes', default='100000,1000000'); p.add_argument('--dense-n', type=int, default=100_000)
    p.add_argument('--rank-bm25-queries', type=int, default=50)
    a = p.parse_args()
    if a.step:
        if not a.dir: p.error('a step needs --dir')
        print(json.dumps(STEPS[a.step](a))); return
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix='fastbook_bench_scale_'))
    try:
        results = {f'bm25_{n}': bm25_study(n, out, a.rank_bm25_queries) for n in map(int, a.sizes.split(',')) if n}
        if a.dense_n: results[f'dense_{a.dense_n}'] = dense_study(a.dense_n, out, a.budget_s)
        if a.out: (out/'scale.json').write_text(json.dumps(results, indent=1))
        print(json.dumps(results, indent=1))
    finally:
        if not a.out: shutil.rmtree(out, ignore_errors=True)

if __name__ == '__main__': main()
