"""README.md from nbs/index.ipynb: nbconvert's markdown, with the notebook-relative links made repository-relative.

    python tools/readme.py            # write README.md
    python tools/readme.py --check    # CI: fail when README.md differs from what would be written
    python tools/readme.py --run      # CI: each section's Python blocks, in order, in a fresh interpreter

`nbs/index.ipynb` links the course and the reference as `tutorials/...` and `api/...`, which is right beside it (and on
the docs site); README.md sits at the repository's root, so the same links there read `nbs/tutorials/...`.
"""
import re, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def readme() -> str:
    md = subprocess.run([sys.executable, '-m', 'jupyter', 'nbconvert', '--to', 'markdown', '--stdout', '--log-level',
                         'ERROR', str(ROOT/'nbs'/'index.ipynb')], check=True, capture_output=True, text=True).stdout
    return re.sub(r'\]\((tutorials|api|tests)/', r'](nbs/\1/', md)

def sections(md:str) -> dict[str, str]:
    "Each `## ` section's Python: its fenced blocks without a language (shell blocks are fenced as `sh`), in order."
    out, name, lang, block = {}, None, None, []
    for line in md.splitlines(keepends=True):
        if line.startswith('## ') and lang is None: name = line[3:].strip()
        elif line.startswith('```'):
            if lang is None: lang, block = line[3:].strip(), []
            else:
                if lang == '' and name: out[name] = out.get(name, '') + ''.join(block)
                lang = None
        elif lang is not None: block.append(line)
    return out

def run_sections(md:str):
    "Run each section's Python in a fresh interpreter, in a scratch folder; exit naming the first section that fails."
    for name, code in sections(md).items():
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, '-c', code], cwd=d, capture_output=True, text=True)
        if r.returncode: sys.exit(f"README section {name!r} fails in a fresh interpreter:\n{r.stderr[-2000:]}")
        print(f"README section {name!r}: runs as written")

if __name__ == '__main__':
    if '--run' in sys.argv[1:]: run_sections((ROOT/'README.md').read_text(encoding='utf-8')); sys.exit()
    text, fn = readme(), ROOT/'README.md'
    if '--check' in sys.argv[1:]:
        if fn.read_text(encoding='utf-8') != text:
            sys.exit('README.md is out of date: regenerate it with `python tools/readme.py`')
        print('README.md current')
    else: fn.write_text(text, encoding='utf-8')
