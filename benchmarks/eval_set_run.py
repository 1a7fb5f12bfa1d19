"""A fastbook-sized `build-eval-set` against the local chat-completions server: calls, seconds, and what the pool finds.

All 191 questions against all 271 chunks (chunk size 500), proposers BM25 and the bundled MiniLM, top 20 each, graded
by `FakeChatServer` from the benchmark's gold contexts (`context_grade`), so nothing leaves the machine.
- the command, as a user runs it (a fresh process, an empty embedding cache): the dry run, the run, and the rerun;
- in-process: the judging alone at several concurrencies (the embeddings cached);
- the pool: how many of the relevant (question, chunk) pairs of a complete grading (51,761 pairs) the candidates hold.
`--quick` does the same on chapter 10 alone (20 questions, 25 chunks), at one concurrency.
Usage: python benchmarks/eval_set_run.py [--data DIR] [--quick]
"""
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path

here = Path(__file__).parent

def cli(args, env):
    "Wall seconds and stdout of `fastbook-bench ARGS` in a fresh process."
    t = time.perf_counter()
    r = subprocess.run([sys.executable, '-c', 'import sys; from fastbook_bench.cli import main; sys.exit(main())', *args],
                       env=env, capture_output=True, text=True)
    if r.returncode: sys.exit(f"fastbook-bench {' '.join(args)} failed:\n{r.stderr[-3000:]}")
    return time.perf_counter() - t, r.stdout

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', help='fastbook-benchmark folder (default: $FASTBOOK_BENCH_DATA, then the cache)')
    p.add_argument('--quick', action='store_true', help='chapter 10 only, one concurrency')
    a = p.parse_args()
    tmp = Path(tempfile.mkdtemp())
    if a.data: os.environ['FASTBOOK_BENCH_DATA'] = a.data
    os.environ.update(HF_HUB_OFFLINE='1', FASTBOOK_BENCH_CACHE=str(tmp/'cache'),
                      PYTHONPATH=str(here.parent) + os.pathsep + os.environ.get('PYTHONPATH', ''))
    sys.path.insert(0, str(here.parent))
    from fastbook_bench.chunking import build_corpus
    from fastbook_bench.data import load_benchmark, question_id
    from fastbook_bench.eval_set import build_eval_set, context_grade
    from fastbook_bench.judge import LLMJudge
    from fastbook_bench.judgments import relevance
    from fastbook_bench.methods import BuildOptions
    from fastbook_bench.testing import FakeChatServer

    questions, corpus = load_benchmark(), build_corpus(chunk_size=500)
    ids = range(len(corpus.passages))
    if a.quick: questions, ids = [q for q in questions if q['chapter'] == 10], corpus.chapter_indices(10)
    queries = {question_id(q): q['question_text'].strip('"\'') for q in questions}
    docs = {f'c{i}': corpus.passages[i] for i in ids}
    by_text = {queries[question_id(q)].strip(): q for q in questions}
    for name, d in (('q.jsonl', queries), ('c.jsonl', docs)):
        (tmp/name).write_text(''.join(json.dumps({'id': i, 'text': t}) + '\n' for i, t in d.items()))
    print(f"{len(queries)} questions x {len(docs)} chunks = {len(queries) * len(docs)} pairs; "
          "top 20 of bm25 and the bundled MiniLM")

    quiet = BuildOptions(progress=False)
    with FakeChatServer(label=lambda q, d: context_grade(by_text[q], d)) as srv:
        args = ['build-eval-set', '--queries', str(tmp/'q.jsonl'), '--corpus', str(tmp/'c.jsonl'), '--models', 'bm25,bundled',
                '--topk', '20', '--llm-base-url', srv.url, '--llm-model', 'gold-contexts', '--out', str(tmp/'set'), '--no-progress']
        for what, extra in (('dry run (empty cache)', ['--dry-run', '--price-per-call', '0.0002']), ('run', []), ('rerun', [])):
            secs, out = cli(args + extra, os.environ)
            print(f"\n== command, {what}: {secs:.1f} s wall\n{out.strip()}")
        print(f"server requests: {dict(srv.hits)}")

        print("\n== judging alone, in-process (embeddings cached), seconds for all calls")
        for c in ((8,) if a.quick else (1, 8, 32)):
            j = LLMJudge(srv.url, 'gold-contexts')
            s = build_eval_set(queries, docs, ['bm25', 'bundled'], j, tmp/f'set-c{c}', k=20, concurrency=c, options=quiet)
            t = time.perf_counter(); build_eval_set(queries, docs, ['bm25', 'bundled'], j, tmp/f'set-c{c}', k=20, options=quiet)
            propose = time.perf_counter() - t   # the rerun judges nothing: it is the proposing (and writing) time
            print(f"concurrency {c:>2}: {s['calls']} calls, {s['seconds']:.1f} s in all, of which "
                  f"~{s['seconds'] - propose:.1f} s judging ({s['calls'] / max(s['seconds'] - propose, 1e-9):.0f} calls/s)")

    built = json.loads((tmp/'set/relevance.json').read_text())
    t = time.perf_counter()
    complete = relevance([{'query_id': qid, 'doc_id': did, 'label': context_grade(by_text[qt.strip()], d)}
                          for qid, qt in queries.items() for did, d in docs.items()])
    n_c, n_b = sum(map(len, complete.values())), sum(map(len, built.values()))
    print(f"\n== pool: {n_b} of the {n_c} relevant pairs of the complete grading found ({n_b / n_c:.1%}); "
          f"{len(built)} of {len(complete)} questions with a relevant chunk keep one "
          f"(complete grading: {time.perf_counter() - t:.1f} s)")

if __name__ == '__main__': main()
