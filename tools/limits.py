"""Notebook limits: a tutorial or reference notebook stays readable in one sitting.

    python tools/limits.py        # prints each notebook's size and exits 1 on any notebook over its limits

Source characters of every cell (markdown and code, outputs not counted), the median and the largest code cell:
- tutorials (nbs/tutorials): at most 15,000 characters, median code cell at most 150;
- reference (nbs/api, one notebook a module): at most 25,000 characters, median code cell at most 250;
- both: no code cell over 2,000 characters.
Test notebooks (nbs/tests) and experiments have no limits.
"""
import json, statistics, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMITS = {'tutorials': (15_000, 150), 'api': (25_000, 250)}  # folder of nbs/: (characters, median code cell)
LARGEST_CELL = 2_000

def sizes(nb:Path) -> tuple[int, float, int]:
    "Source characters, median and largest code cell of notebook `nb`."
    cells = json.loads(nb.read_text())['cells']
    src = lambda c: ''.join(c['source']) if isinstance(c['source'], list) else c['source']
    code = [len(src(c)) for c in cells if c['cell_type'] == 'code'] or [0]
    return sum(len(src(c)) for c in cells), statistics.median(code), max(code)

def check() -> list[str]:
    problems = []
    for folder, (most, median) in LIMITS.items():
        for nb in sorted((ROOT/'nbs'/folder).glob('*.ipynb')):
            chars, med, big = sizes(nb)
            over = ([f'{chars:,} characters > {most:,}'] * (chars > most)
                    + [f'median code cell {med:g} > {median}'] * (med > median)
                    + [f'a code cell of {big:,} characters > {LARGEST_CELL:,}'] * (big > LARGEST_CELL))
            print(f"{'OVER' if over else 'ok':4s} {nb.relative_to(ROOT)}: {chars:,} characters, median {med:g}, largest {big:,}")
            problems += [f'{nb.relative_to(ROOT)}: {o}' for o in over]
    return problems

if __name__ == '__main__':
    problems = check()
    if problems: print('\n'.join(problems), file=sys.stderr); sys.exit(1)
    print('notebooks within their limits')
