"""BM25 engines side by side on one seeded synthetic corpus: this package's bm25 index, bm25s (in memory and
memory-mapped), tantivy and PISA (through pyterrier-pisa), each run as its users would run it.

Corpus (seeded by --seed, streamed to disk a block at a time, never whole in memory): a vocabulary of 50,000
pseudo-words of 2-12 lower-case letters, shortest first, drawn from a Zipf law (exponent 1.07; rank 1 = the shortest
word); passage lengths log-normal with mean 60 words (sigma 0.3, at least 5); written as corpus.jsonl
({"_id": "d<row>", "text": ...}).
Two query sets of --queries queries, the i-th of each taken from the same random passage, its one relevant passage
(qrels.tsv): selective (queries_selective.jsonl) = that passage's 4 rarest distinct words; frequent-word
(queries_frequent.jsonl) = 4 of its words at random positions (so mostly frequent words).

Engines, and their BM25 as checked in their sources (every engine: no stemming, no stopwords; text lower-cased and split
into words, which for these letters-only texts gives the same tokens everywhere):
- fastbook: `build_index(corpus, out, method='bm25')`, `open_index(out).search(queries, 10)`; BM25Okapi as rank-bm25
  (k1=1.5, b=0.75, IDF log((N-n+0.5)/(n+0.5)), a negative IDF replaced by 0.25 x the mean IDF), as of this writing:
  the settings its manifest records are kept in the JSON.
  Threads: `numba.set_num_threads(t)` for the search (the build imports no numba), OMP_NUM_THREADS=t.
- bm25s / bm25s-mmap (one build): texts read into a list, `bm25s.tokenize(texts, stopwords=None)` (its default
  stopwords='english' would drop pseudo-words that spell English stopwords; its token pattern keeps words of 2+
  letters), `bm25s.BM25()` defaults (method 'lucene': k1=1.5, b=0.75, IDF log(1+(N-n+0.5)/(n+0.5)), float32, numpy backend),
  `.index(tokens)`, `.save(dir)`; opened with `BM25.load(dir)` (in memory) or `BM25.load(dir, mmap=True)`; searched with
  `retrieve(bm25s.tokenize(queries, stopwords=None), k=10, n_threads=0 (one thread) or t)`. Skipped above
  --bm25s-max passages (building in memory needs about 3.4 GB a million passages).
- tantivy: schema of a text field (default tokenizer, indexed, not stored: no other engine keeps the texts) and a
  stored integer `row`; `index.writer(heap_size=256 MB, num_threads=build threads)`, one `add_document` a passage,
  `commit`, `wait_merging_threads`; opened with `Index.open` + `reload` + `searcher()`; each query `parse_query(q,
  ['text'])` (terms OR-ed; characters of the query syntax replaced by spaces first), `searcher.search(query, 10,
  count=False)` (count=True would count every match, which turns off tantivy's block-max pruning), rows read with
  `searcher.doc`; t threads = a thread pool over the queries. BM25 of Lucene: k1=1.2, b=0.75 (constants of tantivy's
  bm25.rs, as `Query.explain` shows), IDF log(1+(N-n+0.5)/(n+0.5)), document lengths quantised to one byte.
- pisa: `PisaIndex(dir, text_field='text', stemmer='none', stops='none', threads=t)` (pyterrier-pisa's defaults are
  stemmer='porter2', stops='terrier': off here as for the others), `.index(dicts of docno and text)`; searched with
  `.bm25(num_results=10, threads=t)` on a DataFrame of qid and query (block-max WAND, the default); BM25 of
  pyterrier-pisa's defaults k1=0.9, b=0.4, IDF log((N-n+0.5)/(n+0.5)) floored at 1e-6 (PISA's scorer/bm25.hpp).
  pyterrier is imported but Java is not started (recorded as java_loaded).

Measured, each step in its own niced process (peak RSS = ru_maxrss of that process, imports included):
- build: seconds (reading the corpus file included), peak RSS, index size on disk; built with the largest of --threads
  (the index the searches use), and with each count of --build-threads too, --build-repeats times each (the median
  kept, every round in the JSON), every engine given the same count: fastbook's `processes` (counting processes beside
  the one reading the corpus), tantivy's writer `num_threads`, PISA's `threads` (each beside Python's thread that
  feeds it the documents); the builds table gives each engine's seconds a count, and fastbook's time over PISA's and
  tantivy's (< 1: faster);
- search, once per thread count t in --threads (OMP_NUM_THREADS=t): open = opening the index in a fresh process
  plus answering one query (PISA and others load lazily), the page cache warm from the build; per query set, queries/s
  of the whole set as one batch (best of --repeats after a warm-up pass), at the first thread count (1 by default)
  also the latency of each query searched alone (p50, p99), the process's peak RSS (the table: the largest over thread
  counts); Recall@10 against the qrels and the mean top-10 overlap with fastbook's rows (|A ∩ B| / 10), from the
  results of the first thread count;
- first search: opening plus one query, as open, in a fresh process whose numba cache is empty (NUMBA_CACHE_DIR a new
  folder): what the first search after an install costs, this package's compiling included (the peers compile nothing);
  --first-repeats fresh processes, each with its own empty cache (the median kept, every run in the JSON): single runs
  spread widely on a shared machine.
Prints a markdown table per corpus size; --json FILE keeps every figure.
Usage: python benchmarks/bm25_peers.py [--passages 200000 1000000] [--engines fastbook bm25s bm25s-mmap tantivy pisa]
         [--queries 500] [--threads 1 N] [--repeats 3] [--bm25s-max 1000000] [--seed 0] [--out DIR] [--json FILE]
         [--build-threads 1 2] [--build-repeats 1] [--first-repeats 5] [--builds-only]
Quick: python benchmarks/bm25_peers.py --passages 20000
Builds at 1 and 2 threads (issue 43): python benchmarks/bm25_peers.py --engines fastbook tantivy pisa
         --passages 200000 1000000 --build-threads 1 2 --build-repeats 3 --builds-only --out /work/bench/peers
Without --out, corpus and indexes go to a new temporary folder, removed at the end.
"""
import argparse, importlib, json, os, re, resource, shutil, subprocess, sys, tempfile, time
from importlib.metadata import version
from pathlib import Path
import numpy as np

ENGINES = ['fastbook', 'bm25s', 'bm25s-mmap', 'tantivy', 'pisa']
SETS = ['selective', 'frequent']
VOCAB, ZIPF, MEAN_WORDS, BLOCK, K = 50_000, 1.07, 60, 50_000, 10
TANTIVY_HEAP = 256_000_000

def peak_mb() -> float: return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def folder_mb(p:Path) -> float: return sum(f.stat().st_size for f in p.rglob('*') if f.is_file()) / 2**20

# ---------------------------------------------------------------- corpus
def vocabulary(n:int, rng) -> list[str]:
    "`n` distinct pseudo-words of 2-12 letters, shortest first (the most frequent)."
    out, seen = [], set()
    while len(out) < n:
        lens, letters = rng.integers(2, 13, n), rng.integers(97, 123, (n, 12), dtype=np.uint8)
        for row, l in zip(letters, lens):
            w = row[:l].tobytes().decode('ascii')
            if w not in seen: seen.add(w); out.append(w)
            if len(out) == n: break
    return sorted(out, key=len)

def step_corpus(a) -> dict:
    "Write corpus.jsonl, queries_selective.jsonl, queries_frequent.jsonl and qrels.tsv into --dir."
    rng, d, t = np.random.default_rng(a.seed), Path(a.dir), time.perf_counter()
    d.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary(VOCAB, rng)
    wl = np.array([len(w) for w in vocab]); mat = np.full((VOCAB, 13), 32, np.uint8)  # each word, then spaces
    for i, w in enumerate(vocab): mat[i, :len(w)] = np.frombuffer(w.encode(), np.uint8)
    cdf = np.cumsum(1 / np.arange(1, VOCAB + 1) ** ZIPF); cdf /= cdf[-1]
    targets = np.sort(rng.choice(a.passages, min(a.queries, a.passages), replace=False)); picked, tokens = {}, 0
    with open(d/'corpus.jsonl', 'w', encoding='ascii') as f:
        for start in range(0, a.passages, BLOCK):
            m = min(BLOCK, a.passages - start)
            lens = np.maximum(5, np.rint(rng.lognormal(np.log(MEAN_WORDS) - 0.045, 0.3, m))).astype(np.int64)
            ids = np.minimum(np.searchsorted(cdf, rng.random(int(lens.sum())), 'right'), VOCAB - 1).astype(np.int32)
            ends = np.cumsum(lens); tokens += int(ends[-1])
            for r in targets[(targets >= start) & (targets < start + m)]:
                i = r - start; picked[int(r)] = ids[ends[i] - lens[i]:ends[i]].copy()
            keep = np.arange(13) <= wl[ids][:, None]  # a word's letters and one space
            text = mat[ids][keep]; text[np.cumsum(wl[ids] + 1)[ends - 1] - 1] = 10  # a passage's last space: a newline
            lines = text.tobytes().decode('ascii').split('\n')
            f.write(''.join(f'{{"_id": "d{start + i}", "text": "{s}"}}\n' for i, s in enumerate(lines[:m])))
    qrng = np.random.default_rng([a.seed, 1])
    qs = {'selective': [np.unique(picked[r])[-4:] for r in targets],  # the largest ids: the rarest words
          'frequent': [picked[r][qrng.choice(len(picked[r]), 4, replace=False)] for r in targets]}
    for name, ws in qs.items():
        with open(d/f'queries_{name}.jsonl', 'w') as f:
            for j, w in enumerate(ws): f.write(json.dumps({'_id': f'q{j}', 'text': ' '.join(vocab[x] for x in w)}) + '\n')
    qrels = ''.join(f'q{j}\td{r}\t1\n' for j, r in enumerate(targets))
    (d/'qrels.tsv').write_text('query-id\tcorpus-id\tscore\n' + qrels)
    return dict(passages=a.passages, queries=len(targets), vocab=VOCAB, zipf=ZIPF, seed=a.seed,
                mean_words=tokens / a.passages, corpus_mb=(d/'corpus.jsonl').stat().st_size / 2**20,
                write_s=time.perf_counter() - t, peak_rss_mb=peak_mb())

def texts(d:Path):
    "The corpus's texts, streamed."
    with open(d/'corpus.jsonl', encoding='utf-8') as f:
        for line in f: yield json.loads(line)['text']

# ---------------------------------------------------------------- engines
def set_numba(t:int) -> str|None:
    "Give numba `t` threads, if it imports; its version."
    try: import numba
    except ImportError: return None
    numba.set_num_threads(t); return numba.__version__

class Skip(Exception): "The engine cannot run here (not installed, say): skip it, with this reason."

def need(module:str):
    "Import `module`, or raise Skip naming it."
    try: return importlib.import_module(module)
    except Exception as e: raise Skip(f"{module} not importable ({type(e).__name__}: {(str(e) or '-').splitlines()[0]})")

def build_fastbook(d:Path, out:Path, t:int) -> dict:
    from fastbook_bench.index import build_index
    build_index(d/'corpus.jsonl', out, method='bm25', processes=t)  # t counting processes; no numba imported
    settings = json.loads((out/'manifest.json').read_text()).get('settings')
    return dict(version=version('fastbook_bench'), numba=version('numba'), settings=settings)

def build_bm25s(d:Path, out:Path, t:int) -> dict:
    bm25s = need('bm25s')
    docs = list(texts(d)); tok = bm25s.tokenize(docs, stopwords=None, show_progress=False); del docs
    r = bm25s.BM25(); r.index(tok, show_progress=False); r.save(out, show_progress=False)
    return dict(version=version('bm25s'), k1=r.k1, b=r.b, method=r.method, idf_method=r.idf_method, dtype=r.dtype)

def build_tantivy(d:Path, out:Path, t:int) -> dict:
    tantivy = need('tantivy')
    schema = tantivy.SchemaBuilder().add_text_field('text').add_integer_field('row', stored=True).build()
    out.mkdir(parents=True); index = tantivy.Index(schema, path=str(out))
    w = index.writer(heap_size=TANTIVY_HEAP, num_threads=t)
    for i, s in enumerate(texts(d)): w.add_document(tantivy.Document(text=s, row=i))
    w.commit(); w.wait_merging_threads()
    return dict(version=version('tantivy'), heap_size=TANTIVY_HEAP)

def build_pisa(d:Path, out:Path, t:int) -> dict:
    need('pyterrier'); pp = need('pyterrier_pisa')
    idx = pp.PisaIndex(str(out), text_field='text', stemmer='none', stops='none', threads=t)
    idx.index({'docno': f'd{i}', 'text': s} for i, s in enumerate(texts(d)))
    return dict(version=version('pyterrier-pisa'), stemmer='none', stops='none', java_loaded='jnius' in sys.modules)

BUILDS = {'fastbook': build_fastbook, 'bm25s': build_bm25s, 'tantivy': build_tantivy, 'pisa': build_pisa}

def open_fastbook(out:Path, t:int, mmap:bool=False):
    set_numba(t)
    from fastbook_bench.index import open_index
    idx = open_index(out)
    return lambda qs: [[r for r, _ in hits] for hits in idx.search(qs, K)]

def open_bm25s(out:Path, t:int, mmap:bool=False):
    import bm25s
    r = bm25s.BM25.load(out, mmap=mmap)
    def search(qs):
        docs, _ = r.retrieve(bm25s.tokenize(qs, stopwords=None, show_progress=False), k=K,
                             n_threads=0 if t == 1 else t, show_progress=False)
        return docs.tolist()
    return search

def open_tantivy(out:Path, t:int, mmap:bool=False):
    import tantivy
    from concurrent.futures import ThreadPoolExecutor
    index = tantivy.Index.open(str(out)); index.reload(); searcher = index.searcher()
    def one(q):
        hits = searcher.search(index.parse_query(re.sub(r'[^\w]+', ' ', q), ['text']), K, count=False).hits
        return [searcher.doc(a)['row'][0] for _, a in hits]
    pool = ThreadPoolExecutor(t) if t > 1 else None
    return lambda qs: list(pool.map(one, qs)) if pool and len(qs) > 1 else [one(q) for q in qs]

def open_pisa(out:Path, t:int, mmap:bool=False):
    import pandas as pd, pyterrier_pisa as pp
    ret = pp.PisaIndex(str(out), stemmer='none', stops='none', threads=t).bm25(num_results=K, threads=t)
    def search(qs):
        res = ret(pd.DataFrame({'qid': [str(i) for i in range(len(qs))], 'query': qs}))
        q, rank = res['qid'].astype(int).to_numpy(), res['rank'].to_numpy(); o = np.lexsort((rank, q))
        rows = [[] for _ in qs]
        for i, dn in zip(q[o], res['docno'].to_numpy()[o]): rows[i].append(int(dn[1:]))
        return rows
    return search

OPENS = {'fastbook': open_fastbook, 'bm25s': open_bm25s, 'bm25s-mmap': open_bm25s, 'tantivy': open_tantivy,
         'pisa': open_pisa}

def built(engine:str) -> str: return engine.split('-')[0]  # bm25s-mmap searches bm25s's build

def step_build(a) -> dict:
    "Build --engine's index of --dir's corpus with --threads threads."
    d = Path(a.dir); out = d/f'index-{a.engine}'; shutil.rmtree(out, ignore_errors=True)
    try:
        t = time.perf_counter(); info = BUILDS[a.engine](d, out, a.threads); s = time.perf_counter() - t
    except Skip as e: return dict(skipped=str(e))
    return dict(info, build_s=s, build_threads=a.threads, index_mb=folder_mb(out), build_peak_rss_mb=peak_mb())

def opened(a) -> tuple:
    "--engine's index opened in this fresh process and one query answered: the search, the query sets, the seconds."
    d = Path(a.dir); qs = {n: [json.loads(l)['text'] for l in open(d/f'queries_{n}.jsonl')] for n in SETS}
    if a.engine == 'fastbook': mod = 'fastbook_bench.bm25_search'  # the searcher's module (the kind's is the build's)
    else: mod = {'pisa': 'pyterrier_pisa', 'tantivy': 'tantivy'}.get(a.engine, 'bm25s')
    importlib.import_module(mod)  # imports are not the index's opening
    t0 = time.perf_counter()
    search = OPENS[a.engine](d/f'index-{built(a.engine)}', a.threads, mmap=a.engine.endswith('mmap'))
    search(qs['selective'][:1]); return search, qs, time.perf_counter() - t0

def step_first(a) -> dict:
    "`opened`'s seconds (run with an empty numba cache)."
    return dict(first_s=opened(a)[2])

def step_search(a) -> dict:
    "Open --engine's index in this fresh process and search both query sets with --threads threads."
    search, qs, open_s = opened(a)
    out = dict(threads=a.threads, open_s=open_s, open_peak_rss_mb=peak_mb(), sets={})
    for n, q in qs.items():
        rows = search(q); best = np.inf  # the warm-up pass gives the results
        for _ in range(a.repeats): t1 = time.perf_counter(); search(q); best = min(best, time.perf_counter() - t1)
        r = dict(qps=len(q) / best, rows=[[int(x) for x in rw] for rw in rows])
        if a.latency:
            lat = []
            for x in q: t1 = time.perf_counter(); search([x]); lat.append(time.perf_counter() - t1)
            r.update(p50_ms=1e3 * float(np.percentile(lat, 50)), p99_ms=1e3 * float(np.percentile(lat, 99)))
        out['sets'][n] = r
    if a.engine == 'pisa': out['java_loaded'] = 'jnius' in sys.modules
    return dict(out, search_peak_rss_mb=peak_mb())

STEPS = {'corpus': step_corpus, 'build': step_build, 'first': step_first, 'search': step_search}

# ---------------------------------------------------------------- driver
def child(step:str, threads:int=1, env:dict|None=None, **opts) -> dict:
    "Run one step in a fresh, niced process with `threads` threads (and `env`); its JSON, or {'error': ...}."
    cmd = ['nice', sys.executable, str(Path(__file__).resolve()), step, '--threads', str(threads)]
    cmd += [x for k, v in opts.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    print('$', ' '.join(cmd[1:]), file=sys.stderr, flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE='1', **(env or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode or not r.stdout.strip():
        err = [l for l in r.stderr.strip().splitlines() if l.strip()] or [f'exit status {r.returncode}']
        return dict(error=err[-1][:300], stderr=r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])

def scores(rows:list, qrels:list, ref:list|None) -> dict:
    "Recall@10 against the one relevant row of each query; mean top-10 overlap with `ref`'s rows."
    rec = float(np.mean([g in r[:K] for r, g in zip(rows, qrels)]))
    ov = None if ref is None else float(np.mean([len(set(r[:K]) & set(f[:K])) / K for r, f in zip(rows, ref)]))
    return dict(recall_at_10=rec, overlap_at_10=ov)

def fmt(x, spec='.3g') -> str: return '–' if x is None else format(x, spec) if isinstance(x, float) else str(x)

def table(n:int, res:dict, threads:list) -> str:
    "The markdown table of corpus size `n`."
    head = ['engine', 'queries', 'build s', 'build MB', 'index MB', 'first s', 'open s',
            *[f'q/s {t}t' for t in threads],
            'p50 ms', 'p99 ms', 'search MB', 'R@10', 'overlap@10']
    lines = [f'\n### {n:,} passages\n', '| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for e, r in res.items():
        if 'search' not in r: lines.append(f"| {e} | {r.get('skipped') or 'failed: ' + r['error']} |"); continue
        b, s = r['build'], r['search']
        for n_ in SETS:
            one = s[threads[0]]['sets'][n_]
            row = [e, n_, fmt(b['build_s']), fmt(b['build_peak_rss_mb'], '.0f'), fmt(b['index_mb'], '.1f'),
                   fmt(r['first'].get('first_s')), fmt(s[threads[0]]['open_s']),
                   *[fmt(s[t]['sets'][n_]['qps'], '.0f') for t in threads],
                   fmt(one.get('p50_ms')), fmt(one.get('p99_ms')),
                   fmt(max(x['search_peak_rss_mb'] for x in s.values()), '.0f'),
                   fmt(r['scores'][n_]['recall_at_10']), fmt(r['scores'][n_]['overlap_at_10'])]
            lines.append('| ' + ' | '.join(row) + ' |')
    return '\n'.join(lines)

def build_table(n:int, res:dict, bts:list) -> str:
    "The markdown table of build seconds (medians) at each thread count of `bts`, fastbook's over PISA's and tantivy's."
    med = {e: {t: r[t]['build_s'] for t in bts if 'build_s' in r.get(t, {})} for e, r in res.items()}
    head = ['engine', *[f'build s {t}t' for t in bts]]
    lines = [f'\n### builds, {n:,} passages (median of --build-repeats)\n', '| ' + ' | '.join(head) + ' |',
             '|' + '---|' * len(head)]
    lines += ['| ' + ' | '.join([e, *[fmt(m.get(t)) for t in bts]]) + ' |' for e, m in med.items()]
    for peer in ('pisa', 'tantivy'):
        if 'fastbook' in med and peer in med:
            r = [med['fastbook'][t] / med[peer][t] if t in med['fastbook'] and t in med[peer] else None for t in bts]
            lines.append('| ' + ' | '.join([f'fastbook / {peer}', *[fmt(x, '.2f') for x in r]]) + ' |')
    return '\n'.join(lines)

def build_rounds(e:str, d:Path, a, keep:int|None) -> tuple[dict, dict|None]:
    """Engine `e` built --build-repeats times at each --build-threads count: {t: median's figures, rounds}; the build at
    `keep` threads done last (the index the searches use) and its figures (None: no build kept)."""
    out, kept = {}, None
    for t in [x for x in a.build_threads if x != keep] + ([keep] if keep is not None else []):
        reps = a.build_repeats if t in a.build_threads else 1
        rs = [child('build', t, dir=d, engine=e) for _ in range(reps)]
        if bad := [r for r in rs if 'build_s' not in r]:
            print(f"{e}: {bad[0].get('skipped') or 'build failed: ' + bad[0]['error']}", file=sys.stderr)
            return {t: bad[0]}, bad[0]
        if t == keep: kept = rs[-1]
        if t in a.build_threads:
            s = sorted(r['build_s'] for r in rs)
            out[t] = dict(build_s=float(np.median(s)), rounds=[r['build_s'] for r in rs])
            print(f"{e}: built at {t} threads in {', '.join(f'{x:.2f}' for x in out[t]['rounds'])} s", file=sys.stderr)
    return out, kept

def first_rounds(e:str, d:Path, a) -> dict:
    "Engine `e`'s first search, --first-repeats times in fresh processes, each with an empty numba cache: the median."
    rs = []
    for _ in range(a.first_repeats):
        with tempfile.TemporaryDirectory(prefix='numba-') as nc:
            rs.append(child('first', a.threads[0], env=dict(NUMBA_CACHE_DIR=nc), dir=d, engine=e))
        if 'first_s' not in rs[-1]: return rs[-1]
    runs = [r['first_s'] for r in rs]
    print(f"{e}: first search in {', '.join(f'{x:.2f}' for x in runs)} s", file=sys.stderr)
    return dict(first_s=float(np.median(runs)), runs=runs)

def run_size(n:int, a, root:Path) -> dict:
    "Corpus, builds and searches at `n` passages; the figures of each engine."
    d = root/f'synthetic-{n}-seed{a.seed}-q{a.queries}'; out = {}
    if (d/'corpus.json').is_file(): out['corpus'] = json.loads((d/'corpus.json').read_text())
    else:
        out['corpus'] = child('corpus', dir=d, passages=n, queries=a.queries, seed=a.seed)
        if 'error' in out['corpus']: raise RuntimeError(f"corpus of {n} passages: {out['corpus']['stderr']}")
        (d/'corpus.json').write_text(json.dumps(out['corpus']))
    print(f"corpus: {n:,} passages, {out['corpus']['mean_words']:.1f} words a passage", file=sys.stderr)
    qrels = [int(l.split('\t')[1][1:]) for l in (d/'qrels.tsv').read_text().splitlines()[1:]]
    res, builds, bt, bres = {}, {}, max(a.threads), {}
    for e in a.engines:
        if a.builds_only:
            if e.startswith('bm25s') and n > a.bm25s_max: continue
            if built(e) not in bres: bres[built(e)] = build_rounds(built(e), d, a, None)[0]
            continue
        if e.startswith('bm25s') and n > a.bm25s_max:
            res[e] = dict(skipped=f'skipped above --bm25s-max {a.bm25s_max:,} passages (in-memory build)')
            print(f'{e}: {res[e]["skipped"]}', file=sys.stderr); continue
        if built(e) not in builds: bres[built(e)], builds[built(e)] = build_rounds(built(e), d, a, bt)
        b = builds[built(e)]
        if 'skipped' in b or 'error' in b:
            res[e] = b; print(f"{e}: {b.get('skipped') or 'build failed: ' + b['error']}", file=sys.stderr); continue
        first = first_rounds(e, d, a)
        s = {t: child('search', t, dir=d, engine=e, repeats=a.repeats, latency=int(t == a.threads[0])) for t in a.threads}
        if bad := [x for x in s.values() if 'error' in x]:
            res[e] = bad[0]; print(f"{e}: search failed: {bad[0]['error']}", file=sys.stderr); continue
        res[e] = dict(build=b, first=first, search=s)
        qps = s[a.threads[0]]['sets']['selective']['qps']
        print(f"{e}: built in {b['build_s']:.1f} s, {qps:.0f} selective q/s", file=sys.stderr)
    if a.build_threads: print(build_table(n, bres, a.build_threads), flush=True)
    if a.builds_only: return dict(out, builds=bres)
    ref = res.get('fastbook', {}).get('search')
    for e, r in res.items():
        if 'search' in r:
            r['scores'] = {n_: scores(r['search'][a.threads[0]]['sets'][n_]['rows'], qrels,
                                      ref[a.threads[0]]['sets'][n_]['rows'] if ref else None) for n_ in SETS}
    print(table(n, res, a.threads), flush=True)
    for r in res.values():  # the rows stay out of the JSON
        for s in r.get('search', {}).values():
            for x in s['sets'].values(): x.pop('rows', None)
        r.pop('stderr', None)
    return dict(out, engines=res, builds=bres)

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('step', nargs='?', choices=list(STEPS), help='one step (internal: each runs in its own process)')
    p.add_argument('--passages', type=int, nargs='+', default=[200_000, 1_000_000], help='corpus sizes')
    p.add_argument('--engines', nargs='+', default=ENGINES, choices=ENGINES)
    p.add_argument('--queries', type=int, default=500, help='queries of each set')
    p.add_argument('--threads', type=int, nargs='+', default=sorted({1, os.cpu_count() or 1}),
                   help='thread counts to search with (the first also times single queries; the largest builds)')
    p.add_argument('--repeats', type=int, default=3, help='timed passes over each query set (the best is kept)')
    p.add_argument('--bm25s-max', type=int, default=1_000_000, help='largest corpus bm25s is built for (in memory)')
    p.add_argument('--build-threads', type=int, nargs='+', default=[],
                   help='thread counts to build every engine with, besides the one the searches use (the builds table)')
    p.add_argument('--build-repeats', type=int, default=1, help='builds at each --build-threads count (the median)')
    p.add_argument('--first-repeats', type=int, default=5,
                   help='fresh processes timing the first search, each with an empty numba cache (the median)')
    p.add_argument('--builds-only', action='store_true', help='the builds table only: no search, no kept build')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--out', help='folder to keep corpus and indexes in (default: a temporary one, removed at the end)')
    p.add_argument('--json', help='file to write every figure to')
    p.add_argument('--dir', help=argparse.SUPPRESS); p.add_argument('--engine', help=argparse.SUPPRESS)
    p.add_argument('--latency', type=int, default=1, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.step:
        a.threads, a.passages = a.threads[0], a.passages[0]
        print(json.dumps(dict(STEPS[a.step](a), load_1_5_15=os.getloadavg()))); return
    if a.builds_only and not a.build_threads: p.error('--builds-only needs --build-threads')
    counts = {'--passages': a.passages, '--queries': [a.queries], '--threads': a.threads, '--repeats': [a.repeats],
              '--build-threads': a.build_threads, '--build-repeats': [a.build_repeats],
              '--first-repeats': [a.first_repeats]}
    for flag, xs in counts.items():  # before any corpus is written: a count below 1 gave a table of zeros or NaN
        if min(xs, default=1) < 1: p.error(f'{flag} must be at least 1, got {min(xs)}')
    root = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix='bm25_peers-'))  # after the checks: none left behind
    allres = dict(config=dict(engines=a.engines, queries=a.queries, threads=a.threads, repeats=a.repeats, seed=a.seed,
                              build_threads=a.build_threads, build_repeats=a.build_repeats,
                              first_repeats=a.first_repeats,
                              bm25s_max=a.bm25s_max, cpus=os.cpu_count(), python=sys.version.split()[0]), sizes={})
    try:
        for n in a.passages:
            allres['sizes'][n] = run_size(n, a, root)
            if a.json: Path(a.json).write_text(json.dumps(allres, indent=1))
    finally:
        if not a.out: shutil.rmtree(root, ignore_errors=True)

if __name__ == '__main__': main()
