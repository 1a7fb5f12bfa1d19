"""Re-execute notebooks and keep their outputs current: `--save` writes fresh outputs, `--check` fails on stale ones.

    python tools/outputs.py --save nbs/08_scoring.ipynb        # execute, save the outputs, nbdev_clean the file
    python tools/outputs.py --check                            # CI: every notebook in nbs/ and experiments/
    python tools/outputs.py --check --flags slow experiments/  # also the cells flagged slow

Cells run as `nbdev_test` runs them: cells flagged with a `tst_flags` flag (settings.ini) are skipped unless named in
`--flags`, and so are `#| eval: false` cells; a skipped cell keeps whatever output it had. A kept output is stale when a
fresh execution prints something else. Cells marked `#| volatile` (timings, progress) are saved but never compared.
`--check` also checks the numbers quoted in markdown: each decimal number, and each integer of three digits or more,
must appear in a code cell or a kept output of the same notebook (for `index.ipynb`, of any notebook checked), counting only
cells that run under `--flags` (a number backed by a skipped cell is backed by nothing that ran); numbers inside
backticks, `$...$` or link targets are code or notation and are not checked.

`--nbdev-test` runs the notebooks with `nbdev_test` itself (its file selection, skip flags, `test_nb`, working folders;
`--flags` passed on as its `--flags`) and records what each executed cell printed, so that CI executes every notebook
once: the test run is the run whose outputs are compared (or saved). Each notebook runs in a fresh process (nbdev_test
reuses a worker for the next notebook), the ones with cells flagged in `--flags` first.
"""
import argparse, base64, json, multiprocessing, os, re, sys, time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from configparser import ConfigParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _config():
    cfg = ConfigParser(); cfg.read(ROOT/'settings.ini')
    return cfg['DEFAULT']

def notebooks(paths):
    "The .ipynb files named by `paths` (files or folders), checkpoints left out."
    out = []
    for p in map(Path, paths):
        if not p.exists(): continue
        fs = sorted(p.rglob('*.ipynb')) if p.is_dir() else [p]
        out += [f.resolve() for f in fs if '.ipynb_checkpoints' not in f.parts and not f.name.startswith('_')]
    return out

def _text(x): return ''.join(x) if isinstance(x, list) else (x or '')

def normalise(outputs):
    "What a reader sees of a cell's outputs, comparable across executions (no execution counts, no metadata)."
    out = []
    for o in outputs or []:
        t = o.get('output_type')
        if t == 'stream': out.append(('stream', o.get('name'), _text(o.get('text'))))
        elif t in ('execute_result', 'display_data'):
            out.append(('data', tuple(sorted((k, _text(v)) for k, v in (o.get('data') or {}).items()))))
        elif t == 'error': out.append(('error', o.get('ename'), o.get('evalue')))
    # consecutive pieces of one stream are one text
    merged = []
    for o in out:
        if merged and o[0] == 'stream' and merged[-1][0] == 'stream' and merged[-1][1] == o[1]:
            merged[-1] = ('stream', o[1], merged[-1][2] + o[2])
        else: merged.append(o)
    return merged

def _directives(src):
    "The `#|` directives of a cell: {name: [args]}."
    out = {}
    for line in src.splitlines():
        if not line.startswith('#|'): 
            if line.strip(): break
            continue
        parts = line[2:].strip().split()
        if parts: out[parts[0].rstrip(':')] = parts[1:]
    return out

def execute(fn, flags):
    "Execute notebook `fn` as nbdev_test does; returns ({cell id: outputs} of executed cells, volatile ids, error or None)."
    from execnb.shell import CaptureShell
    from execnb.nbio import read_nb
    os.environ['IN_TEST'] = '1'
    if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))
    nb = read_nb(fn)
    k, ran, volatile, err = CaptureShell(fn), {}, set(), None
    cwd = os.getcwd(); os.chdir(Path(fn).parent)
    try:
        for cell in nb.cells:
            if cell.cell_type != 'code': continue
            d = _directives(cell.source)
            if 'nbdev_export(' in cell.source or not _runs(cell.source, flags): continue
            cell.outputs = []
            k.cell(cell)
            ran[cell.id] = [dict(o) for o in cell.get('outputs', [])]
            if 'volatile' in d: volatile.add(cell.id)
            if k.exc:
                err = f"{fn.name}, cell {cell.idx_}: {type(k.exc[1]).__name__ if isinstance(k.exc, tuple) else k.exc}\n{k.prettytb(fname=fn)}"
                break
    finally: os.chdir(cwd)
    return ran, volatile, err

class _Recorder:
    "Wraps execnb's `CaptureShell` as nbdev_test makes it: each executed cell's outputs go to a JSON file in `folder`."
    def __init__(self, shell_class, folder): self.shell_class, self.folder = shell_class, folder
    def __call__(self, path=None, *args, **kwargs):
        shell, folder = self.shell_class(path, *args, **kwargs), self.folder
        run_all = shell.run_all
        def recorded(nb, exc_stop=False, preproc=lambda c: False, *args, **kwargs):
            ran = []
            def pre(cell):
                skip = preproc(cell)
                if not skip and cell.cell_type == 'code': cell.outputs = []; ran.append(cell)  # not the kept ones
                return skip
            try: return run_all(nb, exc_stop, pre, *args, **kwargs)
            finally:
                out = {'path': str(Path(path).resolve()), 'failed': bool(shell.exc),
                       'ran': {c.id: _plain([dict(o) for o in c.get('outputs', [])]) for c in ran}}
                name = re.sub(r'\W', '_', str(Path(path).resolve().relative_to(ROOT)))
                (Path(folder)/f'{name}.json').write_text(json.dumps(out))
        shell.run_all = recorded
        return shell

def _in_fresh_process(f, *args, **kwargs):
    "`f(*args, **kwargs)` in a new process of its own: spawned, and not a daemon (a notebook may start processes)."
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn')) as ex:
        return ex.submit(f, *args, **kwargs).result()

def _test_nb(fn, folder, **kwargs):
    "nbdev's `test_nb` on notebook `fn`, in this (fresh) process, its shell recording outputs into `folder`."
    import nbdev.test
    from execnb.shell import CaptureShell
    nbdev.test.CaptureShell = _Recorder(CaptureShell, folder)
    return nbdev.test.test_nb(fn, **kwargs)

def _isolated(folder, flags):
    "A stand-in for the `parallel` nbdev_test calls: each notebook in a fresh process, flagged ones first."
    def parallel(f, items, *args, n_workers=1, pause=0, **kwargs):
        first = sorted(range(len(items)), key=lambda i: not any(
            set(flags) & _directives(_text(c['source'])).keys() for c in json.loads(Path(items[i]).read_text())['cells']))
        with ThreadPoolExecutor(max(n_workers, 1)) as pool:
            done = {i: pool.submit(_in_fresh_process, _test_nb, items[i], folder, *args, **kwargs) for i in first}
            return [done[i].result() for i in range(len(items))]
    return parallel

def via_nbdev_test(flags, path=None):
    "Run `nbdev_test --flags FLAGS [--path PATH]`, recording outputs: ({notebook: (ran, volatile, failed)}, passed)."
    import tempfile, nbdev.test
    with tempfile.TemporaryDirectory() as folder:
        # nbdev_test's own file selection, flags and `test_nb`; but where it reuses a worker process for the next
        # notebook, each notebook here gets a fresh one, as a reader running it does: a notebook's printed outputs
        # (the library's once-a-process notices, pandas' display options) do not depend on what ran before it
        nbdev.test.parallel = _isolated(folder, flags)
        cwd = os.getcwd(); os.chdir(ROOT)
        try: nbdev.test.nbdev_test.__wrapped__(path=path, flags=' '.join(flags), timing=True); passed = True
        except SystemExit as e: passed = not e.code
        finally: os.chdir(cwd)
        runs = {}
        for f in Path(folder).glob('*.json'):
            r = json.loads(f.read_text())
            fn = Path(r['path'])
            src = {c.get('id'): _text(c['source']) for c in json.loads(fn.read_text())['cells']}
            volatile = {i for i in r['ran'] if 'volatile' in _directives(src.get(i, ''))}
            runs[fn] = (r['ran'], volatile, r['failed'])
    return runs, passed

def _plain(o):
    "An output as plain JSON types (execnb hands back AttrDicts and lists)."
    return json.loads(json.dumps(o, default=lambda x: dict(x) if hasattr(x, 'keys') else list(x)))

def save(fn, ran):
    "Write the outputs of the executed cells into `fn`, then nbdev_clean it."
    nb = json.loads(fn.read_text())
    for c in nb['cells']:
        if c['cell_type'] == 'code' and c.get('id') in ran:
            c['outputs'] = [_plain(o) for o in ran[c['id']]]
            for o in c['outputs']: o.pop('execution_count', None) if o.get('output_type') != 'execute_result' else None
    fn.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n')
    from nbdev.clean import nbdev_clean
    cwd = os.getcwd(); os.chdir(ROOT)
    try: nbdev_clean(fname=str(fn))
    finally: os.chdir(cwd)

def stale(fn, ran, volatile):
    "Human-readable differences between the kept outputs of `fn` and a fresh execution."
    nb, problems = json.loads(fn.read_text()), []
    for i, c in enumerate(nb['cells']):
        cid = c.get('id')
        if c['cell_type'] != 'code' or cid not in ran or cid in volatile: continue
        old, new = normalise(c.get('outputs')), normalise(_plain(ran[cid]))
        if old != new:
            problems.append(f"{fn.relative_to(ROOT)}, cell {i} ({cid}): kept output differs from a fresh run\n"
                            f"    kept:  {_short(old)}\n    fresh: {_short(new)}")
    return problems

def _short(outs):
    s = repr([(o[0], o[1], o[2][:300]) if o[0] == 'stream' else o[:1] + tuple(
        (k, v[:40] + '...' if k.startswith('image/') else v[:300]) for k, v in o[1]) if o[0] == 'data' else o for o in outs])
    return s[:700]

NUM = re.compile(r'(?<![\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{3,})(?![\w])')
CODE = re.compile(r'`[^`]*`|\$[^$]+\$|\]\([^)]*\)|https?://\S+|<[^>]+>')

def prose_numbers(fn, corpus):
    "Numbers in the markdown of `fn` that appear in no code cell or kept output of `corpus` (a text)."
    nb, missing = json.loads(fn.read_text()), []
    for i, c in enumerate(nb['cells']):
        if c['cell_type'] != 'markdown': continue
        text = CODE.sub(' ', _text(c['source']))
        for n in NUM.findall(text):
            bare = n.replace(',', '')
            if bare.rstrip('0').rstrip('.') and not any(v in corpus for v in {n, bare, bare.rstrip('0') if '.' in bare else bare}):
                missing.append(f"{fn.relative_to(ROOT)}, cell {i}: the number {n} is quoted in prose but no cell computes or asserts it")
    return missing

def _runs(src, flags):
    "Whether a cell with source `src` runs under `flags`, as `execute` decides."
    d = _directives(src)
    skip = set(_config().get('tst_flags', '').split()) - set(flags)
    return not ((d.get('eval') or [''])[0].lower() == 'false' or skip & d.keys())

def _corpus(fns, flags=()):
    "The code and kept outputs of the cells of `fns` that run under `flags`: what backs a number in prose."
    parts = []
    for fn in fns:
        for c in json.loads(fn.read_text())['cells']:
            if c['cell_type'] != 'code' or not _runs(_text(c['source']), flags): continue
            parts.append(_text(c['source']))
            for o in normalise(c.get('outputs')):
                if o[0] == 'stream': parts.append(o[2])
                elif o[0] == 'data': parts += [v for k, v in o[1] if not k.startswith('image/')]
    return '\n'.join(parts)

def _job(args):
    fn, flags = args
    t = time.time()
    try: ran, volatile, err = execute(fn, flags)
    except Exception as e: ran, volatile, err = {}, set(), f"{fn.name}: {type(e).__name__}: {e}"
    return fn, ran, volatile, err, time.time() - t

def _executed(fns, flags, workers, save_them):
    "Execute `fns` in fresh processes (this tool's own runner); the problems found."
    problems = []
    # the notebooks with flagged cells to run (the slow ones) start first, so that two workers finish together
    flagged = lambda fn: any(set(flags) & _directives(_text(c['source'])).keys() for c in json.loads(fn.read_text())['cells'])
    jobs = sorted(((fn, flags) for fn in fns), key=lambda j: not flagged(j[0]))
    # one fresh process per notebook: IPython's shell replaces a worker's __main__, and a notebook's state stays its own
    with ThreadPoolExecutor(workers) as pool:
        for fn, ran, volatile, err, secs in pool.map(lambda job: _in_fresh_process(_job, job), jobs):
            print(f"{fn.relative_to(ROOT)}: {len(ran)} cells run in {secs:.0f} s" + (' (FAILED)' if err else ''), flush=True)
            if err: problems.append(err); continue
            if save_them: save(fn, ran)
            else: problems += stale(fn, ran, volatile)
    return problems

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument('--save', action='store_true', help='write fresh outputs into the notebooks')
    g.add_argument('--check', action='store_true', help='fail when a kept output is stale or a prose number is unbacked')
    p.add_argument('--flags', default='', help='space-separated test flags to run too (e.g. "slow")')
    p.add_argument('--workers', type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument('--no-prose', action='store_true', help="skip the prose numbers check")
    p.add_argument('--nbdev-test', action='store_true', help="execute with nbdev_test (every notebook of nbs/), once")
    p.add_argument('paths', nargs='*', help='notebooks or folders (default: nbs and experiments; nbs with --nbdev-test)')
    a = p.parse_args()
    if len(a.paths) > 1 and a.nbdev_test: p.error('--nbdev-test takes one path (a notebook or folder of nbs/), as nbdev_test')
    a.paths = a.paths or (['nbs'] if a.nbdev_test else ['nbs', 'experiments'])
    # one BLAS/OpenMP thread per core per worker: two workers with two threads each on two cores run the slow notebooks
    # ~1.6x slower (measured), with the same outputs
    for v in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'): os.environ.setdefault(v, str(max(1, (os.cpu_count() or 1) // a.workers)))
    fns = notebooks([ROOT/x if not Path(x).is_absolute() else x for x in a.paths])
    flags, problems = a.flags.split(), []
    if a.nbdev_test:
        runs, passed = via_nbdev_test(flags, None if a.paths == ['nbs'] else str(Path(a.paths[0]).resolve()))
        if not passed: problems.append('nbdev_test failed (its report is above)')
        missing = [fn for fn in fns if fn not in runs]
        if passed and missing: problems.append(f"nbdev_test ran no cell of {', '.join(str(f) for f in missing)}")
        print(f"nbdev_test executed {sum(len(r[0]) for r in runs.values())} cells of {len(runs)} notebooks", flush=True)
        for fn, (ran, volatile, failed) in sorted(runs.items()):
            if failed: continue
            if a.save: save(fn, ran)
            else: problems += stale(fn, ran, volatile)
    else:
        problems += _executed(fns, flags, a.workers, a.save)
    if a.check and not a.no_prose:
        everything = _corpus(fns, flags)  # what this run executes
        for fn in fns: problems += prose_numbers(fn, everything if fn.name == 'index.ipynb' else _corpus([fn], flags))
    if problems:
        print('\n'.join(problems), file=sys.stderr)
        sys.exit(1)
    print('outputs ' + ('saved' if a.save else 'current'))

if __name__ == '__main__': main()
