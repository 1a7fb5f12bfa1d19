"""FTS5 end to end, fastbook-bench against the published pipeline, run side by side.

Times whole processes (start to summary written), median of --repeat runs:
- reference: the published pipeline (`--reference` mode of this script, which imports nothing of fastbook_bench):
  RAGatouille's CorpusProcessor chunks each chapter (cut in halves first), all chunks go into one SQLite FTS5 table,
  each question's keywords are searched in its chapter, and the published scorer (ftfy.fix_text on both sides inside
  the innermost loop) scores the top 10;
- cold: `fastbook-bench run --methods fts5` with an empty cache folder;
- warm: the same command again with the cache it filled.
Every process may write Python's byte code (PYTHONDONTWRITEBYTECODE is dropped from their environment), as an installed
package has it: with it off, this package's modules are compiled again in every process, its pipeline's are not.
Then times scoring one 191-question run: the published scorer against `score_rows`, each in a fresh process (so that
nothing is normalised yet) with an empty cache, with the corpus's normalised passages in the disk cache, and a second
time in the same process (everything normalised in memory). Checks that both pipelines retrieve the same passages.
Usage: python benchmarks/fts5_end_to_end.py [--data DIR] [--repeat 5]
Quick: python benchmarks/fts5_end_to_end.py --repeat 1
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

def reference(data:Path) -> dict:
    "The published FTS5 pipeline on `data`: sums of its scores, the time of each stage, and what it retrieved."
    t0 = time.perf_counter()
    import csv, sqlite3
    from ftfy import fix_text
    from ragatouille.data import CorpusProcessor
    t_import = time.perf_counter()
    chapters = {'1': '01_intro', '2': '02_production', '4': '04_mnist_basics', '8': '08_collab', '9': '09_tabular',
                '10': '10_nlp', '13': '13_convolutions'}
    def notebook_text(path):
        text = ''
        for cell in json.loads(Path(path).read_text())['cells']:
            if cell['cell_type'] == 'markdown' and any('## Questionnaire' in line for line in cell['source']): break
            if cell['cell_type'] in ('markdown', 'code'): text += ''.join(cell['source']) + '\n'
        return text
    def halves(text):
        size = int(len(text) / 2)
        return [text[i:i + size] for i in range(0, len(text), size)]
    processor = CorpusProcessor()
    con = sqlite3.connect(':memory:')
    con.execute("CREATE VIRTUAL TABLE fastbook_text USING FTS5(chapter, text)")
    for ch, nb in chapters.items():
        docs = processor.process_corpus(halves(notebook_text(data/f'chapters/{nb}.ipynb')), chunk_size=500)
        con.executemany("INSERT INTO fastbook_text(chapter, text) VALUES (?, ?)", [(ch, d['content']) for d in docs])
    t_chunk = time.perf_counter()
    questions = json.loads((data/'fastbook-benchmark.json').read_text())['questions']
    keywords = {(int(r['chapter']), int(r['question_number'])): r['keywords']
                for r in csv.DictReader(open(data/'fts_keywords.csv'))}
    results = []
    for q in questions:
        words = keywords[q['chapter'], q['question_number']].replace('"', '').split()
        rows = con.execute("SELECT text FROM fastbook_text WHERE fastbook_text MATCH ? AND chapter = ? ORDER BY rank LIMIT 10",
                           (' OR '.join(f'"{t.strip(",")}"' for t in words), str(q['chapter']))).fetchall()
        results.append([r[0] for r in rows])
    t_search = time.perf_counter()
    def found(ac, p): return any(fix_text(c) in fix_text(p) for c in ac.get('context', []))
    def mrr(question, passages, cutoff=10):
        highest = 0
        for ac in question['answer_context']:
            hit = next((r for r, p in enumerate(passages[:cutoff], 1) if found(ac, p)), 0)
            if not hit: return 0.0
            highest = max(highest, hit)
        return 1.0 / highest if highest else 0.0
    def recall(question, passages, cutoff=10):
        hits = [any(found(ac, p) for p in passages[:cutoff]) for ac in question['answer_context']]
        return sum(hits) / len(hits)
    mrr_sum = sum(mrr(q, r) for q, r in zip(questions, results))
    recall_sum = sum(recall(q, r) for q, r in zip(questions, results))
    t_score = time.perf_counter()
    return dict(mrr_sum=round(mrr_sum, 5), recall_sum=round(recall_sum, 5), import_s=t_import - t0,
                chunk_s=t_chunk - t_import, search_s=t_search - t_chunk, score_s=t_score - t_search,
                total_s=t_score - t0, results=results)

def score_child(data:str, results_file:str, disk:bool) -> dict:
    "In a fresh process: seconds to score the run with `score_rows`, then a second time in the same process."
    from fastbook_bench.chunking import build_corpus
    from fastbook_bench.data import load_benchmark
    from fastbook_bench.scoring import normalize_all, score_rows
    questions, results = load_benchmark(data), json.loads(Path(results_file).read_text())
    passages = build_corpus(data).passages if disk else None
    t = time.perf_counter()
    if disk: normalize_all(passages)                      # the passages' normal forms, read from the disk cache
    rows = score_rows(questions, results)
    first = time.perf_counter() - t
    t = time.perf_counter(); score_rows(questions, results); again = time.perf_counter() - t
    return dict(first_s=first, again_s=again, mrr_sum=sum(r['mrr_at_10'] for r in rows))

def run(cmd, env) -> tuple[float, str]:
    "Wall-clock seconds of `cmd` and its stdout."
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode: sys.exit(f"{' '.join(map(str, cmd))} failed:\n{r.stderr[-3000:]}")
    return time.perf_counter() - t, r.stdout

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', default=None, help='fastbook-benchmark folder (default: FASTBOOK_BENCH_DATA, then the cache)')
    p.add_argument('--repeat', type=int, default=5)
    p.add_argument('--reference', metavar='DATA', help=argparse.SUPPRESS)   # the published pipeline, as a child
    p.add_argument('--score', nargs=3, metavar=('DATA', 'RESULTS', 'DISK'), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.reference: print(json.dumps(reference(Path(a.reference)))); return
    if a.score: print(json.dumps(score_child(a.score[0], a.score[1], a.score[2] == '1'))); return

    import csv
    from fastbook_bench.data import data_dir
    data = str(data_dir(a.data))
    me, env = [sys.executable, str(Path(__file__).resolve())], dict(os.environ, FASTBOOK_BENCH_DATA=data, HF_HUB_OFFLINE='1')
    env.pop('PYTHONDONTWRITEBYTECODE', None)  # as installed: pip writes the byte code; an editable install, the first run
    cli = [sys.executable, '-c', 'import sys; from fastbook_bench.cli import main; sys.exit(main())']
    ref, ref_score, cold, warm = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.repeat):
            t, out = run(me + ['--reference', data], env); ref.append(t); ref_out = json.loads(out); ref_score.append(ref_out['score_s'])
            e, res = dict(env, FASTBOOK_BENCH_CACHE=f'{tmp}/cache{i}'), f'{tmp}/results{i}'
            cmd = cli + ['run', '--methods', 'fts5', '--no-progress', '--out', res]
            cold.append(run(cmd, e)[0])
            warm.append(run(cmd, e)[0])
        rows = list(csv.DictReader(open(Path(res)/'per_question.csv')))
        same = sum(json.loads(r['passages']) == p for r, p in zip(rows, ref_out['results']))
        ours = sum(float(r['mrr_at_10']) for r in rows), sum(float(r['recall_at_10']) for r in rows)
        (results := Path(tmp)/'reference_results.json').write_text(json.dumps(ref_out['results']))
        def scoring(cache, disk):
            runs = [json.loads(run(me + ['--score', data, str(results), str(int(disk))], dict(env, FASTBOOK_BENCH_CACHE=cache))[1])
                    for _ in range(a.repeat)]
            return statistics.median(r['first_s'] for r in runs), statistics.median(r['again_s'] for r in runs)
        s_none, s_memory = scoring(f'{tmp}/empty-cache', disk=False)   # ftfy on every text
        s_disk, _ = scoring(e['FASTBOOK_BENCH_CACHE'], disk=True)      # the cache the last cold/warm pair filled

    med = statistics.median
    print(f"runs: {a.repeat} (median); same passages as the published pipeline for {same}/{len(rows)} questions")
    print(f"MRR@10 / Recall@10 sums: reference {ref_out['mrr_sum']} / {ref_out['recall_sum']}, "
          f"fastbook-bench {ours[0]:.5f} / {ours[1]:.5f}")
    print(f"reference pipeline     {med(ref):6.2f} s  (last run: import {ref_out['import_s']:.2f}, chunk {ref_out['chunk_s']:.2f}, "
          f"search {ref_out['search_s']:.3f}, score {ref_out['score_s']:.2f})")
    print(f"fastbook-bench cold    {med(cold):6.2f} s  {med(ref) / med(cold):5.1f}x faster")
    print(f"fastbook-bench warm    {med(warm):6.2f} s  {med(ref) / med(warm):5.1f}x faster")
    r = med(ref_score)
    print(f"scoring one run: reference {r * 1000:.0f} ms; ours {s_none * 1000:.1f} ms with no cache ({r / s_none:.0f}x), "
          f"{s_disk * 1000:.1f} ms with the corpus's normal forms cached on disk ({r / s_disk:.0f}x), "
          f"{s_memory * 1000:.2f} ms in memory ({r / s_memory:.0f}x)")

if __name__ == '__main__': main()
