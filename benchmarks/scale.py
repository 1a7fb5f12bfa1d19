"""Retrieval at 100k and 1M passages on this machine: BM25 (bm25s against rank-bm25) and single-vector + faiss.

Each measurement runs in its own process, so its peak memory (ru_maxrss) is its own:
- corpus: a seeded synthetic collection written as a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv):
  Zipf-distributed English words (MiniLM's whole-word vocabulary, one token each), passages of 20-80 words (dense: 8-20), each query four words of one passage
  (its two rarest and two others), that passage being its one relevant document;
- bm25: `load_dataset` (streamed), `BM25Retriever(backend=...)` indexing time, queries/s over the queries (rank-bm25: a
  sample), peak memory, Recall@10 and nDCG@10 against the synthetic qrels, the top 10 of the first queries;
- dense: encoding throughput of the bundled MiniLM, then faiss flat against HNSW and IVF on the encoded passages:
  build time, search latency (one query at a time) and Recall@10 of the approximate index against flat; encoding
  stops after --budget-s seconds, and the indexes then hold the passages encoded by then.
Usage: python benchmarks/scale.py [--out DIR] [--sizes 100000,1000000] [--dense-n 100000]   (everything, as subprocesses)
       python benchmarks/scale.py STEP --n N [...]                                            (one step; prints JSON)
"""
import argparse, json, os, resource, subprocess, sys, time
from pathlib import Path
import numpy as np

here = Path(__file__).parent
sys.path.insert(0, str(here.parent))

def rss_mb() -> float:
    "Resident memory of this process now, in MB."
    import psutil
    return psutil.Process().memory_info().rss / 2**20

def peak_mb() -> float: return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def vocabulary() -> list[str]:
    "The 21,358 lower-case words of 3+ letters in the bundled MiniLM's vocabulary, in its (roughly frequency) order: one token each."
    import re
    from fastbook_bench.single_vector import bundled_model_path
    return [w for w in (bundled_model_path()/'vocab.txt').read_text().split('\n') if re.fullmatch('[a-z]{3,}', w)]

def synthetic(n:int, seed:int=0, words=(20, 80), n_queries:int=1000):
    "A seeded collection: (passages, queries, relevant passage of each query)."
    rng = np.random.default_rng(seed)
    vocab = np.array(vocabulary())
    p = 1 / np.arange(1, len(vocab) + 1) ** 1.07; p /= p.sum()
    lens = rng.integers(words[0], words[1] + 1, n)
    ids = rng.choice(len(vocab), lens.sum(), p=p).astype(np.int32)
    cuts = np.concatenate([[0], np.cumsum(lens)])
    passages = [' '.join(vocab[ids[cuts[i]:cuts[i + 1]]]) for i in range(n)]
    targets = rng.choice(n, n_queries, replace=False)
    queries = []
    for t in targets:
        w = np.unique(ids[cuts[t]:cuts[t + 1]])
        rare = w[np.argsort(-w)][:2]                     # higher id = rarer under Zipf
        other = rng.choice(w, min(2, len(w)), replace=False)
        queries.append(' '.join(vocab[np.concatenate([rare, other])]))
    return passages, queries, [int(t) for t in targets]

def step_corpus(a):
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

def step_bm25(a):
    "Index and search with the package's BM25Retriever."
    from fastbook_bench.datasets import load_dataset, to_run
    from fastbook_bench.fts import BM25Retriever
    from fastbook_bench.scoring import evaluate
    t = time.perf_counter(); ds = load_dataset(a.dir); read_s = time.perf_counter() - t
    ids, qids = list(ds.corpus), list(ds.queries)[:a.queries]
    passages = list(ds.corpus.values()); del ds.corpus
    base = rss_mb()
    t = time.perf_counter(); r = BM25Retriever(passages, backend=a.backend); index_s = time.perf_counter() - t
    index_mb = rss_mb() - base
    qs = [ds.queries[q] for q in qids]
    t = time.perf_counter(); res = r.search(qs, k=10); search_s = time.perf_counter() - t
    run = to_run(qids, ids, res)
    m = evaluate({q: ds.qrels[q] for q in qids}, run, ['recall@10', 'ndcg@10'])
    return dict(n=len(passages), backend=a.backend, read_s=read_s, index_s=index_s, queries=len(qs), search_s=search_s,
                qps=len(qs) / search_s, index_rss_mb=index_mb, peak_rss_mb=peak_mb(), **m,
                top10=[[ids[i] for i, _ in x] for x in res[:a.compare]], scores=[[s for _, s in x] for x in res[:a.compare]])

def _latency(index, q:np.ndarray, k:int=10):
    "Mean seconds per single-query search, and the results of all queries."
    out = []
    t = time.perf_counter()
    for v in q: out.append(index.search(v[None], k)[1][0])
    return (time.perf_counter() - t) / len(q), np.array(out)

def step_dense(a):
    "Encode with the bundled MiniLM; faiss flat against HNSW and IVF."
    import faiss, torch
    from fastbook_bench.datasets import load_dataset
    from fastbook_bench.single_vector import load_sentence_model, BUNDLED_MODEL
    ds = load_dataset(a.dir)
    passages, queries = list(ds.corpus.values())[:a.encode], list(ds.queries.values())[:a.queries]
    model, name = load_sentence_model(BUNDLED_MODEL, device='cpu')
    enc = lambda xs: model.encode(xs, batch_size=64, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
    t, parts = time.perf_counter(), []
    for i in range(0, len(passages), 1000):  # stop at the time budget: the index part then runs on what was encoded
        parts.append(enc(passages[i:i + 1000]))
        if time.perf_counter() - t > a.budget_s: break
    emb = np.concatenate(parts); encode_s = time.perf_counter() - t
    t = time.perf_counter(); qv = enc(queries); q_encode_s = time.perf_counter() - t
    d, res = emb.shape[1], dict(n=len(emb), asked=len(passages), model=name, torch_threads=torch.get_num_threads(), faiss_threads=faiss.omp_get_max_threads(),
                                 encode_s=encode_s, passages_per_s=len(emb) / encode_s, queries_per_s_encode=len(qv) / q_encode_s)
    t = time.perf_counter(); flat = faiss.IndexFlatIP(d); flat.add(emb); res['flat_build_s'] = time.perf_counter() - t
    res['flat_ms'], truth = _latency(flat, qv); res['flat_ms'] *= 1000
    hnsw = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT); hnsw.hnsw.efConstruction = 40
    t = time.perf_counter(); hnsw.add(emb); res['hnsw_build_s'] = time.perf_counter() - t
    q = faiss.IndexFlatIP(d); nlist = 1024
    ivf = faiss.IndexIVFFlat(q, d, nlist, faiss.METRIC_INNER_PRODUCT)
    t = time.perf_counter(); ivf.train(emb); ivf.add(emb); res['ivf_build_s'] = time.perf_counter() - t
    for name_, ix, knob, values in [('hnsw', hnsw, 'efSearch', (16, 64, 128)), ('ivf', ivf, 'nprobe', (8, 32))]:
        for v in values:
            if name_ == 'hnsw': ix.hnsw.efSearch = v
            else: ix.nprobe = v
            ms, got = _latency(ix, qv)
            recall = float(np.mean([len(set(g) & set(t_)) / 10 for g, t_ in zip(got, truth)]))
            res[f'{name_}_{knob}{v}'] = dict(ms=ms * 1000, recall_vs_flat=recall)
    res['peak_rss_mb'] = peak_mb()
    return res

STEPS = {'corpus': step_corpus, 'bm25': step_bm25, 'dense': step_dense}

def child(step:str, **opts) -> dict:
    "Run one step in a fresh, niced process and return its JSON."
    cmd = ['nice', sys.executable, __file__, step] + [x for k, v in opts.items() for x in (f'--{k}', str(v))]
    print('$', ' '.join(cmd[1:]), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE='1'))
    if r.returncode: sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.splitlines()[-1])
    print(json.dumps({k: v for k, v in out.items() if k not in ('top10', 'scores')}), file=sys.stderr, flush=True)
    return out

def everything(a):
    "All steps, each in its own process; results to `a.out`/scale.json."
    out, results = Path(a.out), {}
    for n in map(int, a.sizes.split(',')):
        d = out/f'beir-{n}'
        if not (d/'corpus.jsonl').is_file(): results[f'corpus_{n}'] = child('corpus', n=n, dir=d)
        fast = results[f'bm25s_{n}'] = child('bm25', n=n, dir=d, backend='bm25s', queries=1000)
        slow = results[f'rank_bm25_{n}'] = child('bm25', n=n, dir=d, backend='rank_bm25', queries=a.rank_bm25_queries, compare=a.rank_bm25_queries)
        same = [f == s for f, s in zip(fast['top10'], slow['top10'])]
        diff = max(abs(x - y) for f, s in zip(fast['scores'], slow['scores']) for x, y in zip(f, s))
        results[f'agreement_{n}'] = dict(queries=len(same), same_top10=sum(same), max_score_diff=diff, speedup_qps=fast['qps'] / slow['qps'])
        print(json.dumps(results[f'agreement_{n}']), file=sys.stderr, flush=True)
    if a.dense_n:
        d = out/f'short-{a.dense_n}'
        if not (d/'corpus.jsonl').is_file(): results[f'corpus_short_{a.dense_n}'] = child('corpus', n=a.dense_n, dir=d, words='8,20')
        results[f'dense_{a.dense_n}'] = child('dense', n=a.dense_n, dir=d, encode=a.dense_n, queries=1000, **{'budget-s': a.budget_s})
    for r in results.values(): r.pop('top10', None); r.pop('scores', None)
    (out/'scale.json').write_text(json.dumps(results, indent=1))
    return results

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('step', nargs='?', choices=list(STEPS), help='one step (default: everything)')
    p.add_argument('--n', type=int, default=100_000); p.add_argument('--dir', default=None); p.add_argument('--seed', type=int, default=0)
    p.add_argument('--words', default='20,80'); p.add_argument('--backend', default='bm25s'); p.add_argument('--queries', type=int, default=1000)
    p.add_argument('--compare', type=int, default=50); p.add_argument('--encode', type=int, default=100_000)
    p.add_argument('--budget-s', type=float, default=900)
    p.add_argument('--out', default='/tmp/fastbook_bench_scale'); p.add_argument('--sizes', default='100000,1000000')
    p.add_argument('--rank-bm25-queries', type=int, default=50); p.add_argument('--dense-n', type=int, default=100_000)
    a = p.parse_args()
    if a.step: print(json.dumps(STEPS[a.step](a)))
    else: print(json.dumps(everything(a), indent=1))
