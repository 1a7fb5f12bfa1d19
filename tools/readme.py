"""README.md from nbs/index.ipynb: nbconvert's markdown, with the notebook-relative links made repository-relative.

    python tools/readme.py            # write README.md
    python tools/readme.py --check    # CI: fail when README.md differs from what would be written

`nbs/index.ipynb` links the course and the reference as `tutorials/...` and `api/...`, which is right beside it (and on
the docs site); README.md sits at the repository's root, so the same links there read `nbs/tutorials/...`.
"""
import re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def readme() -> str:
    md = subprocess.run([sys.executable, '-m', 'jupyter', 'nbconvert', '--to', 'markdown', '--stdout', '--log-level',
                         'ERROR', str(ROOT/'nbs'/'index.ipynb')], check=True, capture_output=True, text=True).stdout
    return re.sub(r'\]\((tutorials|api|tests)/', r'](nbs/\1/', md)

if __name__ == '__main__':
    text, fn = readme(), ROOT/'README.md'
    if '--check' in sys.argv[1:]:
        if fn.read_text(encoding='utf-8') != text:
            sys.exit('README.md is out of date: regenerate it with `python tools/readme.py`')
        print('README.md current')
    else: fn.write_text(text, encoding='utf-8')
