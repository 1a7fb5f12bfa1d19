"""Persistent indexes at PolEval and MS MARCO sizes: build time and peak memory of `fastbook_bench.index.build_index`,
queries/s and peak memory of searching the built index, on a seeded synthetic corpus streamed to disk.

Each step runs in its own process, so its peak memory (ru_maxrss) is its own:
- corpus: a seeded synthetic corpus written as JSON lines, a block of passages at a time (never whole in memory):
  words drawn from a Zipf law over a synthetic vocabulary (default 2M pseudo-words, as Wikipedia's long tail has),
  passage lengths in characters log-normal around 300 and cut at a word to at most 500 (PolEval's Wikipedia passages
  are at most 500 characters); 1,000 queries, each four words of one passage (its two rarest and two others), that
  passage being its one relevant document (queries.jsonl and qrels.tsv beside the corpus);
- build: `build_index(corpus, out, method=...)`: seconds, passages/s, peak RSS, index size on disk;
- search: `open_index` (memory-mapped) and the queries searched at k = 10: queries/s, peak RSS, Recall@10 against the
  synthetic qrels.
Usage: python benchmarks/index_scale.py [--passages 8841823] [--method bm25] [--out DIR] [--queries 1000]
       python benchmarks/index_scale.py STEP --dir DIR [...]          (one step; prints its JSON)
Quick: python benchmarks/index_scale.py --passages 20000
Without --out, everything goes to a new temporary folder, removed at the end.
"""
import argparse, json, os, resource, shutil, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np

def peak_mb() -> float:
    "Peak resident memory of this process so far, in MB."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def words(n:int, rng) -> np.ndarray:
    "`n` distinct pseudo-words of 2-12 lower-case letters, most frequent first."
    out, seen = [], set()
    while len(out) < n:
        lens = rng.integers(2, 13, n)
        letters = rng.integers(97, 123, (n, 12), dtype=np.uint8)
        for row, l in zip(letters, lens):
            w = row[:l].tobytes().decode('ascii')
            if w not in seen: seen.add(w); out.append(w)
            if len(out) == n: break
    return np.array(sorted(out, key=len), dtype=object)  # shorter words first: frequent words are short

def passages(n:int, vocab:np.ndarray, rng, block:int=100_000, max_chars:int=500):
    "Yield (passage, word ids) for `n` synthetic passages, a block at a time."
    p = 1 / np.arange(1, len(vocab) + 1) ** 1.07; p /= p.sum()
    per_word = float(p @ (np.array([len(w) for w in vocab]) + 1))  # expected characters a word, its space included
    for start in range(0, n, block):
        m = min(block, n - start)
        chars = np.clip(rng.lognormal(np.log(300), 0.45, m), 40, max_chars)
        lens = np.maximum(3, (chars / per_word).astype(int))
        ids = rng.choice(len(vocab), lens.sum(), p=p)
        cuts = np.concatenate([[0], np.cumsum(lens)])
        for i in range(m):
            w = ids[cuts[i]:cuts[i + 1]]
            text = ' '.join(vocab[w])
            while len(text) > max_chars: w = w[:-1]; text = ' '.join(vocab[w])
            yield text, w

def step_corpus(a) -> dict:
    "Write corpus.jsonl, queries.jsonl and qrels.tsv into --dir."
    rng, d = np.random.default_rng(a.seed), Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter(); vocab = words(a.vocab, rng)
    targets = set(rng.choice(a.passages, min(a.queries, a.passages), replace=False).tolist())
    queries, chars = {}, 0
    with open(d/'corpus.jsonl', 'w', encoding='utf-8') as f:
        for i, (text, w) in enumerate(passages(a.passages, vocab, rng)):
            f.write(json.dumps({'_id': f'p{i}', 'text': text}) + '\n'); chars += len(text)
            if i in targets:
                u = np.unique(w)
                pick = np.concatenate([u[np.argsort(-u)][:2], rng.choice(u, min(2, len(u)), replace=False)])
                queries[f'q{len(queries)}'] = (' '.join(vocab[pick]), f'p{i}')
    with open(d/'queries.jsonl', 'w', encoding='utf-8') as f:
        for q, (text, _) in queries.items(): f.write(json.dumps({'_id': q, 'text': text}) + '\n')
    (d/'qrels.tsv').write_text('query-id\tcorpus-id\tscore\n' + ''.join(f'{q}\t{p}\t1\n' for q, (_, p) in queries.items()))
    return dict(passages=a.passages, vocab=a.vocab, mean_chars=chars / a.passages, write_s=time.perf_counter() - t,
                corpus_mb=(d/'corpus.jsonl').stat().st_size / 2**20, peak_rss_mb=peak_mb())

def step_build(a) -> dict:
    "Build the index of --dir's corpus with --method."
    from fastbook_bench.index import build_index
    d = Path(a.dir); out = d/f'index-{a.method}'
    t = time.perf_counter(); build_index(d/'corpus.jsonl', out, method=a.method); s = time.perf_counter() - t
    size = sum(p.stat().st_size for p in out.rglob('*') if p.is_file())
    return dict(method=a.method, build_s=s, passages_per_s=a.passages / s, index_mb=size / 2**20, peak_rss_mb=peak_mb())

def step_search(a) -> dict:
    "Open the index memory-mapped and search the queries at k = 10."
    from fastbook_bench.datasets import read_qrels, read_queries
    from fastbook_bench.index import open_index
    from fastbook_bench.metrics import evaluate
    d = Path(a.dir)
    qs, qrels = read_queries(d/'queries.jsonl'), read_qrels(d/'qrels.tsv')
    t = time.perf_counter(); idx = open_index(d/f'index-{a.method}', method=a.method); open_s = time.perf_counter() - t
    open_mb = peak_mb()
    t = time.perf_counter(); run = idx.run(list(qs), list(qs.values()), k=10); s = time.perf_counter() - t
    out = dict(method=a.method, queries=len(qs), open_s=open_s, peak_rss_after_open_mb=open_mb, search_s=s,
               qps=len(qs) / s, peak_rss_mb=peak_mb(), **evaluate(qrels, run, ['recall@10', 'ndcg@10']))
    return out

STEPS = {'corpus': step_corpus, 'build': step_build, 'search': step_search}

def child(step:str, **opts) -> dict:
    "Run one step in a fresh, niced process and return its JSON."
    cmd = ['nice', sys.executable, str(Path(__file__).resolve()), step]
    cmd += [x for k, v in opts.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    print('$', ' '.join(cmd[1:]), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE='1'))
    if r.returncode: raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.splitlines()[-1])
    print(json.dumps(out), file=sys.stderr, flush=True)
    return out

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('step', nargs='?', choices=list(STEPS), help='one step (default: all three, each in its own process)')
    p.add_argument('--passages', type=int, default=8_841_823, help='corpus size (MS MARCO: 8841823; PolEval: 7097322)')
    p.add_argument('--vocab', type=int, default=2_000_000, help='size of the synthetic vocabulary')
    p.add_argument('--queries', type=int, default=1000)
    p.add_argument('--method', default='bm25', help='index kind: bm25 or fts5')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--dir', help='the step\'s folder (one step only)')
    p.add_argument('--out', help='folder for corpus and index (default: a temporary one, removed at the end)')
    a = p.parse_args()
    if a.step: print(json.dumps(dict(STEPS[a.step](a), load_1_5_15=os.getloadavg()))); return  # the machine is shared
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix='index_scale-'))
    d = out/f'synthetic-{a.passages}'
    try:
        res = {}
        if not (d/'qrels.tsv').is_file():
            res['corpus'] = child('corpus', dir=d, passages=a.passages, vocab=a.vocab, queries=a.queries, seed=a.seed)
        res['build'] = child('build', dir=d, passages=a.passages, method=a.method)
        res['search'] = child('search', dir=d, method=a.method)
        print(json.dumps(res, indent=1))
    finally:
        if not a.out: shutil.rmtree(out, ignore_errors=True)

if __name__ == '__main__': main()
