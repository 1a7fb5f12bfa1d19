"""Single-vector and ColBERT on this machine: encoding throughput, cached re-run against first run, peak memory.

- throughput: passages/s encoding the 271 chunks (chunk size 500) with each offline model, no cache;
- fallback: seconds until the default (hub) model is known to be unreachable with HF_HUB_OFFLINE=1;
- runs: `fastbook-bench run --methods single_vector,colbert` with an empty cache, then again (passage encodings cached),
  and the default full run (all four methods), each timed as a whole process with its peak RSS (/usr/bin/time).
Usage: python benchmarks/neural_run.py [--data DIR]
"""
import argparse, os, subprocess, sys, tempfile, time
from pathlib import Path

here = Path(__file__).parent

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
    p.add_argument('--data', default=os.environ.get('FASTBOOK_BENCH_DATA', str(here.parent.parent/'shared/fastbook-benchmark')))
    a = p.parse_args()
    os.environ.update(FASTBOOK_BENCH_DATA=a.data, HF_HUB_OFFLINE='1', FASTBOOK_BENCH_CACHE=tempfile.mkdtemp())
    sys.path.insert(0, str(here.parent))
    import torch
    from fastbook_bench.documents import build_corpus
    from fastbook_bench.single_vector import SingleVectorRetriever, load_sentence_model, BUNDLED_MODEL, DEFAULT_MODEL
    from fastbook_bench.colbert import ColBERTRetriever, load_colbert, BUNDLED_COLBERT, DEFAULT_COLBERT
    passages = build_corpus(chunk_size=500).passages
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device cpu; {len(passages)} passages (chunk 500)")

    from sentence_transformers import SentenceTransformer
    from ragatouille import RAGPretrainedModel
    for name, fail in [(DEFAULT_MODEL, lambda: SentenceTransformer(DEFAULT_MODEL)),
                       (DEFAULT_COLBERT, lambda: RAGPretrainedModel.from_pretrained(DEFAULT_COLBERT, verbose=0))]:
        t = time.perf_counter()
        try: fail()
        except Exception: pass
        print(f"fallback decided for {name} in {time.perf_counter() - t:.3f} s")

    st, _ = load_sentence_model(BUNDLED_MODEL)
    t = time.perf_counter(); SingleVectorRetriever(passages, encoder=st, model=BUNDLED_MODEL, cache=False); dt = time.perf_counter() - t
    print(f"encode single_vector {BUNDLED_MODEL}: {dt:.1f} s, {len(passages) / dt:.1f} passages/s")
    load_colbert(BUNDLED_COLBERT)  # build the checkpoint (and compile colbert's extension) outside the timing
    t = time.perf_counter(); r = ColBERTRetriever(passages, model=BUNDLED_COLBERT, cache=False); dt = time.perf_counter() - t
    print(f"encode colbert {BUNDLED_COLBERT}: {dt:.1f} s incl. model load, {len(passages) / dt:.1f} passages/s")

    env = dict(os.environ, FASTBOOK_BENCH_CACHE=tempfile.mkdtemp())
    out = tempfile.mkdtemp()
    cmd = ['fastbook-bench', 'run', '--methods', 'single_vector,colbert', '--no-progress', '--out', out]
    (w1, m1), (w2, m2) = run(cmd, env), run(cmd, env)
    print(f"run single_vector,colbert: first {w1:.1f} s ({m1:.0f} MB peak), cached {w2:.1f} s ({m2:.0f} MB): {w1 / w2:.1f}x faster")
    env = dict(os.environ, FASTBOOK_BENCH_CACHE=tempfile.mkdtemp())
    w, m = run(['fastbook-bench', 'run', '--no-progress', '--out', out], env)
    print(f"default full run (4 methods, empty cache): {w:.1f} s, peak RSS {m:.0f} MB")

if __name__ == '__main__': main()
