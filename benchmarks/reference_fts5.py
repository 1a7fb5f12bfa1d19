"""The published fastbook-benchmark FTS5 pipeline, as a baseline for `fts5_end_to_end.py`.

RAGatouille's CorpusProcessor chunks each chapter (cut in halves first), all chunks go into one SQLite FTS5 table
`fastbook_text(chapter, text)`, each question's keywords are searched inside its chapter, and the published scorer
(ftfy.fix_text on both sides inside the innermost loop) scores the top 10. Prints the sums and the time of each stage.
Usage: python benchmarks/reference_fts5.py DATA_DIR
"""
import time
t0 = time.perf_counter()
import csv, json, sqlite3, sys
from pathlib import Path
from ftfy import fix_text
from ragatouille.data import CorpusProcessor
t_import = time.perf_counter()

data = Path(sys.argv[1])
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
    docs = [d['content'] for d in processor.process_corpus(halves(notebook_text(data/f'chapters/{nb}.ipynb')), chunk_size=500)]
    con.executemany("INSERT INTO fastbook_text(chapter, text) VALUES (?, ?)", [(ch, d) for d in docs])
t_chunk = time.perf_counter()

questions = json.loads((data/'fastbook-benchmark.json').read_text())['questions']
keywords = {(int(r['chapter']), int(r['question_number'])): r['keywords'] for r in csv.DictReader(open(data/'fts_keywords.csv'))}
results = []
for q in questions:
    match = ' OR '.join(f'"{t.strip(",")}"' for t in keywords[q['chapter'], q['question_number']].replace('"', '').split())
    rows = con.execute("SELECT text FROM fastbook_text WHERE fastbook_text MATCH ? AND chapter = ? ORDER BY rank LIMIT 10",
                       (match, str(q['chapter']))).fetchall()
    results.append([r[0] for r in rows])
t_search = time.perf_counter()

def mrr(question, passages, cutoff=10):
    highest = 0
    for ac in question['answer_context']:
        hit = next((r for r, p in enumerate(passages[:cutoff], 1) if any(fix_text(c) in fix_text(p) for c in ac.get('context', []))), 0)
        if not hit: return 0.0
        highest = max(highest, hit)
    return 1.0 / highest if highest else 0.0

def recall(question, passages, cutoff=10):
    found = [any(any(fix_text(c) in fix_text(p) for c in ac.get('context', [])) for p in passages[:cutoff])
             for ac in question['answer_context']]
    return sum(found) / len(found)

mrr_sum = sum(mrr(q, r) for q, r in zip(questions, results))
recall_sum = sum(recall(q, r) for q, r in zip(questions, results))
t_score = time.perf_counter()
print(json.dumps(dict(mrr_sum=round(mrr_sum, 5), recall_sum=round(recall_sum, 5), import_s=t_import - t0,
                      chunk_s=t_chunk - t_import, search_s=t_search - t_chunk, score_s=t_score - t_search,
                      total_s=t_score - t0, results=results)))
