"""Imports follow the reading order: a module imports only modules whose reference notebook comes earlier.

    python tools/imports.py        # prints the order and exits 1 on any import of a later module

The order is the numbering of `nbs/api/` (each notebook's `#| default_exp`; a letter after the number, as in `31a_`,
reads after the number alone). Every `import` of a package module is checked, at module level or inside a function,
in the exported modules and in the reference notebooks' own cells.
Exempt: `from . import __version__` (nbdev's convention) and registries that name modules as strings for
`importlib.import_module` (they are printed, so a reader sees them).
"""
import ast, json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = 'fastbook_bench'
MODULES = {p.stem for p in (ROOT/PKG).glob('*.py')}

def _number(name):
    "A notebook's place: `31_index.ipynb` -> (31, ''); a split-off `31a_fts5_index.ipynb` -> (31, 'a'), read after 31."
    n, letter = re.match(r'(\d+)([a-z]?)_', name).groups()
    return int(n), letter

def order():
    "{module: position} from the numbered reference notebooks' `default_exp`."
    out = {}
    for nb in sorted((ROOT/'nbs'/'api').glob('[0-9]*.ipynb')):
        src = '\n'.join(''.join(c['source']) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code')
        m = re.search(r'^#\|\s*default_exp\s+(\S+)', src, re.M)
        if m: out[m.group(1)] = (_number(nb.name), nb.name)
    return out

def imported(src, exempt_version=True):
    "The package modules that `src` imports, as (line, module)."
    out = []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ''
            if node.level:  # relative: `from .x import y`, or `from . import name`
                if mod: out.append((node.lineno, mod))
                else: out += [(node.lineno, a.name) for a in node.names if not (exempt_version and a.name == '__version__')]
            elif mod.startswith(PKG + '.'): out.append((node.lineno, mod.split('.')[1]))
            elif mod == PKG:  # `from fastbook_bench import x`: a module, or a name of the package's top level
                out += [(node.lineno, a.name if a.name in MODULES else '__init__') for a in node.names
                        if not (exempt_version and a.name == '__version__')]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(PKG + '.'): out.append((node.lineno, a.name.split('.')[1]))
                elif a.name == PKG: out.append((node.lineno, '__init__'))
    return out

def registries(src):
    "String literals naming package modules (loaded by name)."
    return sorted(set(re.findall(rf"['\"]{PKG}\.(\w+)['\"]", src)))

def _cell_src(c):
    return '\n'.join(l for l in ''.join(c['source']).splitlines() if not l.lstrip().startswith(('!', '%')))

def check():
    pos, problems = order(), []
    for mod, (n, nb) in sorted(pos.items(), key=lambda x: x[1]):
        f = ROOT/PKG/(('__init__' if mod == 'api' else mod) + '.py')
        if mod == '__init__' or not f.exists(): f = ROOT/PKG/f'{mod}.py'
        src = f.read_text() if f.exists() else ''
        deps = sorted({m for _, m in imported(src) if m != mod}, key=lambda m: pos.get(m, ((999, ''),))[0])
        print(f"{n[0]:02d}{n[1]:1s} {mod:14s} imports {', '.join(deps) or '-'}"
              + (f"  (loads by name: {', '.join(registries(src))})" if registries(src) else ''))
        for line, m in imported(src):
            if m not in pos: problems.append(f"{PKG}/{f.name}:{line}: imports {m}, which no reference notebook defines")
            elif pos[m][0] >= n and m != mod:
                problems.append(f"{PKG}/{f.name}:{line}: imports {m} ({pos[m][1]}), defined after {nb}")
        for i, c in enumerate(json.loads((ROOT/'nbs'/'api'/nb).read_text())['cells']):
            if c['cell_type'] != 'code': continue
            try: found = imported(_cell_src(c))
            except SyntaxError: continue
            for _, m in found:
                if m in pos and pos[m][0] > n:
                    problems.append(f"nbs/api/{nb}, cell {i}: imports {m} ({pos[m][1]}), defined after this notebook")
    return problems

if __name__ == '__main__':
    problems = check()
    if problems: print('\n'.join(problems), file=sys.stderr); sys.exit(1)
    print('imports follow the reading order')
