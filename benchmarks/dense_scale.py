"""Dense search at MS MARCO size on disk: vector shards (`fastbook_bench.shards`), exact search streamed over them, and
the faiss IVF-PQ option with its recall@10 against exact, on seeded synthetic vectors (encoding 8.8M passages is not
possible on a CPU; the vectors stand in for MiniLM's: 384 dimensions, unit length, clustered).

Each step runs in its own process, so its peak memory (ru_maxrss) is its own:
- limit: the machine's limit for exact search, on vectors already in memory: the best time of float32 `Q @ V.T`
  (--queries x --dim against --limit-rows random rows, a --limit-chunk of rows at a time into one reused buffer),
  numpy's BLAS on 1 thread and on all, scaled linearly to --vectors: seconds and GFLOP/s; `with_top_k` adds the least
  any exact top-k must do, one read of every score (each query's maximum per chunk, what a running threshold compares);
- shards: `encode_shards` over the row numbers with an "encoder" that draws each row's vector from the seeded generator
  of its block of 1,024 rows (points around --clusters random centres, normalised): seconds, rows/s, peak RSS, size on
  disk;
- exact: `search_shards` for --queries query vectors (noisy copies of random rows) at k = 10, on --threads threads
  (default: every core; the one-core figure needs --threads 1 and OMP_NUM_THREADS=1): queries/s, peak RSS; its
  rankings and peak RSS are kept (exact.json) for the recall and memory of the next steps;
- faiss: `faiss_index` (default recipe `default_factory`, or --factory): seconds, peak RSS, index size;
- faiss_search: `faiss_search` without the exact rerank, then with it (--rerank): queries/s, recall@10, peak RSS so
  far, and that peak over the exact step's (the same search without faiss) as a multiple of the index file's size
  (MiB, as the peaks), `rss_over_index`: about 1 with the file memory-mapped, 2.8 when it was read into a buffer that
  faiss copied and deserialized; the rerank adds the shortlisted vectors of one batch of queries (`RERANK_MB`, 8 MiB;
  all --queries x --rerank x 10 rows at once outweighed a small index: 5.8 for IVF512,PQ48 at 300k, now below 0).
  The exact step's peak grows with --threads (a mapped shard and score buffers a thread): compare faiss figures over
  an exact step run with the same --threads (those of the notes until search_shards had threads: --threads 1).
Usage: python benchmarks/dense_scale.py [--vectors 8841823] [--out DIR] [--queries 1000] [--nprobe 16]
       python benchmarks/dense_scale.py limit [--limit-rows 262144] [--limit-chunk 4096]   (the limit alone)
       python benchmarks/dense_scale.py STEP --dir DIR [...]          (one step; prints its JSON)
Quick: python benchmarks/dense_scale.py --vectors 20000
Without --out, everything goes to a new temporary folder, removed at the end.
"""
import argparse, json, os, resource, shutil, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np

def peak_mb() -> float:
    "Peak resident memory of this process so far, in MB."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def centres(a) -> np.ndarray:
    "The seeded cluster centres."
    return np.random.default_rng(a.seed).standard_normal((a.clusters, a.dim), dtype=np.float32)

BLOCK = 1024  # rows drawn together by one seeded generator

def rows_vectors(rows:np.ndarray, c:np.ndarray, a) -> np.ndarray:
    "The synthetic unit vectors of `rows`: each block of BLOCK rows has its own generator, so any rows give the same."
    rows, out = np.asarray(rows, np.int64), np.empty((len(rows), a.dim), np.float32)
    for b in np.unique(rows // BLOCK):
        g, sel = np.random.default_rng([a.seed, int(b)]), rows // BLOCK == b
        v = c[g.integers(len(c), size=BLOCK)] + a.noise * g.standard_normal((BLOCK, a.dim), dtype=np.float32)
        out[sel] = v[rows[sel] % BLOCK]
    return out / np.linalg.norm(out, axis=1, keepdims=True)

def query_vectors(a) -> np.ndarray:
    "--queries noisy copies of random rows."
    g = np.random.default_rng(a.seed + 1)
    q = rows_vectors(g.choice(a.vectors, a.queries, replace=False), centres(a), a)
    q += 0.1 * g.standard_normal(q.shape, dtype=np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)

def _best(f, repeat:int) -> float:
    "Best wall time of `repeat` calls of `f`."
    ts = []
    for _ in range(repeat): t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts)

def step_limit(a) -> dict:
    from threadpoolctl import threadpool_info, threadpool_limits
    g = np.random.default_rng(a.seed)
    q, v = g.standard_normal((a.queries, a.dim), dtype=np.float32), g.standard_normal((a.limit_rows, a.dim), dtype=np.float32)
    out, scale = np.empty((a.queries, a.limit_chunk), np.float32), a.vectors / a.limit_rows
    def gemm(top=False):
        for b in range(0, len(v), a.limit_chunk):
            s = np.matmul(q, v[b:b + a.limit_chunk].T, out=out[:, :min(a.limit_chunk, len(v) - b)])
            if top: s.max(axis=1)
    res = dict(step='limit', rows_timed=a.limit_rows, chunk=a.limit_chunk, queries=a.queries, vectors=a.vectors,
               blas=[(i['internal_api'], i['num_threads']) for i in threadpool_info()])
    for threads in (1, os.cpu_count()):
        with threadpool_limits(threads):
            gemm(); s, st = _best(gemm, a.repeat) * scale, _best(lambda: gemm(True), a.repeat) * scale
        res[f'threads{threads}'] = dict(gemm_s=round(s, 1), gflop_s=round(2 * a.queries * a.dim * a.vectors / s / 1e9, 1),
                                        with_top_k_s=round(st, 1), queries_per_s=round(a.queries / s, 1))
    return res

def step_shards(a) -> dict:
    from fastbook_bench.shards import encode_shards
    c, t = centres(a), time.perf_counter()
    encode = lambda texts: rows_vectors(np.array(texts, dtype=np.int64), c, a)
    encode_shards(map(str, range(a.vectors)), Path(a.dir)/'vectors', encode, settings=dict(synthetic=a.seed),
                  shard_size=a.shard_size, total=a.vectors, progress=False)
    s = time.perf_counter() - t
    size = sum(p.stat().st_size for p in (Path(a.dir)/'vectors').iterdir())
    return dict(step='shards', vectors=a.vectors, seconds=round(s, 1), rows_per_s=round(a.vectors / s),
                peak_rss_mb=round(peak_mb()), disk_gb=round(size / 1e9, 3))

def step_exact(a) -> dict:
    from fastbook_bench.shard_search import search_shards
    q = query_vectors(a); t = time.perf_counter()
    res = search_shards(Path(a.dir)/'vectors', q, 10, block=a.block, threads=a.threads)
    s = time.perf_counter() - t
    (Path(a.dir)/'exact.json').write_text(json.dumps(dict(rankings=res, peak_rss_mb=peak_mb())))
    return dict(step='exact', threads=a.threads or 'all', queries=len(q), seconds=round(s, 2),
                queries_per_s=round(len(q) / s, 1), peak_rss_mb=round(peak_mb()))

def step_faiss(a) -> dict:
    from fastbook_bench.faiss_shards import faiss_index
    t = time.perf_counter(); fn = faiss_index(Path(a.dir)/'vectors', factory=a.factory)
    return dict(step='faiss', factory=a.factory or 'default', seconds=round(time.perf_counter() - t, 1),
                peak_rss_mb=round(peak_mb()), index_mb=round(fn.stat().st_size / 1e6, 1))

def step_faiss_search(a) -> dict:
    from fastbook_bench.faiss_shards import faiss_search, recall_at_k
    q, exact = query_vectors(a), json.loads((Path(a.dir)/'exact.json').read_text())
    index_mb = (Path(a.dir)/'vectors'/'faiss.index').stat().st_size / 2**20
    out = dict(step='faiss_search', nprobe=a.nprobe, index_mb=round(index_mb, 1),
               exact_peak_rss_mb=round(exact['peak_rss_mb']))
    for rerank in (0, a.rerank):
        t = time.perf_counter(); res = faiss_search(Path(a.dir)/'vectors', q, 10, nprobe=a.nprobe, rerank=rerank)
        s = time.perf_counter() - t
        out[f'rerank{rerank}'] = dict(queries_per_s=round(len(q) / s, 1),
                                      recall_at_10=round(recall_at_k(exact['rankings'], res), 4),
                                      peak_rss_mb=round(peak_mb()),
                                      rss_over_index=round((peak_mb() - exact['peak_rss_mb']) / index_mb, 2))
    return out

STEPS = dict(limit=step_limit, shards=step_shards, exact=step_exact, faiss=step_faiss, faiss_search=step_faiss_search)

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('step', nargs='?', choices=list(STEPS))
    p.add_argument('--dir'); p.add_argument('--out')
    p.add_argument('--vectors', type=int, default=8_841_823); p.add_argument('--dim', type=int, default=384)
    p.add_argument('--clusters', type=int, default=1000); p.add_argument('--noise', type=float, default=0.5)
    p.add_argument('--queries', type=int, default=1000); p.add_argument('--shard-size', type=int, default=16384)
    p.add_argument('--block', type=int, default=2048, help="search_shards's rows scored at once")
    p.add_argument('--threads', type=int, help="search_shards's threads (default: every core)")
    p.add_argument('--factory'); p.add_argument('--nprobe', type=int, default=16)
    p.add_argument('--limit-rows', type=int, default=262_144, help="rows the limit step times (in memory)")
    p.add_argument('--limit-chunk', type=int, default=4096); p.add_argument('--repeat', type=int, default=3)
    p.add_argument('--rerank', type=int, default=10); p.add_argument('--seed', type=int, default=0)
    a = p.parse_args()
    if a.step: print(json.dumps(dict(STEPS[a.step](a), load_1_5_15=os.getloadavg()))); return  # the machine is shared
    d = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix='dense_scale.'))
    args = [f'--{k.replace("_", "-")}={v}' for k, v in vars(a).items() if k not in ('step', 'dir', 'out') and v is not None]
    try:
        for step in STEPS:
            r = subprocess.run([sys.executable, __file__, step, '--dir', str(d), *args], capture_output=True, text=True)
            if r.returncode: sys.exit(f"{step} failed:\n{r.stderr[-3000:]}")
            print(r.stdout.strip().splitlines()[-1], flush=True)
    finally:
        if not a.out: shutil.rmtree(d, ignore_errors=True)

if __name__ == '__main__': main()
