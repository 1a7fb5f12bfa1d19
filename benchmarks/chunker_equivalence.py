"""fastbook_bench's chunk_text against RAGatouille's CorpusProcessor: equal output, and the time each takes.

1. Equivalence, at scale: chunk_text vs CorpusProcessor.process_corpus on random texts, edge cases and the fastbook
   chapters at many chunk sizes, and punkt_spans vs NLTK's untrained PunktSentenceTokenizer().span_tokenize. Any
   mismatch is shrunk to a small reproducer. (nbs/04_sentences.ipynb and nbs/05_chunking.ipynb run small versions.)
2. Timing, side by side: both chunkers on the published workload (each chapter cut in halves), median of --repeat
   runs per chunk size, each warmed up first (tokenizer and imports loaded).

usage: python benchmarks/chunker_equivalence.py [--seed S] [--spans N] [--texts N] [--no-chapters] [--data DIR]
                                                [--repeat N] [--timing-sizes 256,500,1000]
quick: python benchmarks/chunker_equivalence.py --spans 300 --texts 30 --repeat 1 --timing-sizes 500
"""
import argparse
import random
import statistics
import sys
import time
import warnings

from fastbook_bench.chunking import chunk_text, split_even
from fastbook_bench.data import chapter_texts
from fastbook_bench.sentences import punkt_spans


class splitter:  # the functions under test
    chunk_text = staticmethod(chunk_text)
    punkt_spans = staticmethod(punkt_spans)
    chunk_corpus = staticmethod(lambda texts, size: [c for t in texts for c in chunk_text(t, size)])

SIZES = [32, 33, 50, 64, 100, 128, 255, 256, 500, 1000, 2000]

# ---------------------------------------------------------------- random text generator
_LOW = "the of and to in is it that for on with as was at by be this are from or an not".split()
_CAP = "The It This We In A I He She They Python Mr Dr John Smith Paris When Why".split()
FRAGMENTS = (
    _LOW * 3 + _CAP * 2
    + [c + "." for c in "ABCJRSTXZabxyzéÉЖжßİ_ΩДö"]
    + ["J. R. R.", "J.R.R.", "U.S.A.", "e.g.", "i.e.", "etc.", "etc.,", "Mr.", "Dr.", "vs.", "No."]
    + ["3.14", "1.", "12.", "2.0.", "-3.5", "1,000.", ",5.", ".5", "v2.0.", "1.2.3", "42", "7)",
       "3.", "-1.", "10.-", "##number##.", "##NUMBER##.", "\U00016130.", "\U00016130\U00016131",
       "٣.", "²."]
    + ["...", "..", "....", ". . .", ". .", "?!", "!!!", "?", "!", ".", "!?", "?.", ".!", "..?"]
    + ['"', "'", ")", "]", "}", "(", "[", "{", "“", "”", "‘", "’", "«", "»", "--", "-", "`",
       '."', ".)", '!"', '?")', ".'", ".”", ".»", ".’", ".]", '.")', "(Yes.)", '"No."', "--.",
       ":", ";", ",", "@", "#", "*", "&", "%", "/", "\\", "|", "~", "^", "=", "+", "<", ">"]
    + [" ", "  ", "\n", "\n\n", "\n\n\n", "\n\n\n\n", "\t", "\r\n", "\r", "\x0b", "\x0c", "\x1c",
       "\x1f", "\x85", "\xa0", "\u2028", "\u2029", "\u3000", "\u2003", "\u200b", "\u180e",
       " \n ", ".\n", ".\n\n", "?\n", "!\n\n\n"]
    + ["def f(x):\n    return x.y()\n", "a = b.c(d, e)", "`code`", "```python\n", "```\n",
       "# Heading\n", "## Questionnaire\n", "- item\n", "* item", "1. item", "**bold**.",
       "[link](http://x.com/a.b).", "import numpy as np\n", "x.shape", "df.head()", "#hide\n",
       ">>> print(1.)\n", "arr[0].", "self.x = 1.", "    ", "<img src=\"a.png\">"]
    + ["😀", "👍🏽", "🇫🇷.", "中文文本", "。", "？", "！", "日本語です。", "한국어.", "Ελληνικά.",
       "e\u0301", "\u0301.", "\u0301", "a\u0301.", "ـ.", "١٢.", "\U0001e4f0."]
    + ["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>"]
)


def random_text(rng, max_len=20000, min_len=0):
    target = rng.choice([0, 1, 5, 30, 200, 1000, 5000, 20000])
    target = rng.randint(min_len, max(min_len, min(target, max_len)))
    bias = rng.sample(FRAGMENTS, rng.randint(3, 40))  # a per-text "style"
    seps = rng.choice([[" "], [" ", "", "\n"], [" ", " ", " ", "\n", "\n\n", ""], [""]])
    out, n = [], 0
    while n < target:
        r = rng.random()
        if r < 0.005:
            frag = rng.choice("xab.") * rng.randint(50, 3000)  # very long word
        elif r < 0.01:
            frag = "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(1, 30)))
        elif r < 0.6:
            frag = rng.choice(bias)
        else:
            frag = rng.choice(FRAGMENTS)
        frag += rng.choice(seps)
        out.append(frag)
        n += len(frag)
    text = "".join(out)
    if rng.random() < 0.2:
        text = rng.choice([" ", "\n", "\n\n ", "\t"]) + text
    if rng.random() < 0.2:
        text += rng.choice([" ", "\n", "  \n\n", "\t"])
    return text


DENSE = list(".?!.. \n\n\t,;:-\"')]}([{“”‘’«»aAbZ1_é\u0301\x1c\xa0\u2028\u3000。#*@&`") + ["J.", "1.", "--", "e.g.", "##number##."]


def random_dense(rng):
    """Short strings over a small alphabet of the characters punkt cares about."""
    return "".join(rng.choice(DENSE) for _ in range(rng.randint(0, 40)))


def random_size(rng):
    r = rng.random()
    if r < 0.1:
        return rng.randint(32, 2100)  # any (many are invalid below 256)
    if r < 0.6:
        return 4 * rng.randint(8, 63)  # valid sizes below 256
    return rng.randint(256, 2100)


# ---------------------------------------------------------------- reference implementations
_cp = None
_pst = None


def reference_chunks(texts, size):
    global _cp
    if _cp is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from ragatouille.data import CorpusProcessor
        _cp = CorpusProcessor()
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # silence the "Metadata length" notice
        return [d["content"] for d in _cp.process_corpus(texts, chunk_size=size)]


def reference_spans(text):
    global _pst
    if _pst is None:
        from nltk.tokenize import PunktSentenceTokenizer

        _pst = PunktSentenceTokenizer()
    return list(_pst.span_tokenize(text))


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as e:  # compare exception types; pydantic's ValidationError (a ValueError
        name = type(e).__name__  # subclass) is reproduced as a plain ValueError
        return ("ValueError" if name == "ValidationError" else name, None)


def describe_diff(a, b):
    if a[0] != b[0]:
        return f"outcome {a[0]} vs {b[0]}"
    x, y = a[1], b[1]
    if x is None:
        return "?"
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q:
            return f"item {i}: ours {p!r:.200} vs ref {q!r:.200}"
    return f"count {len(x)} vs {len(y)}"


def minimize(text, same):
    """Shrink ``text`` while ``same(text)`` stays False (delta debugging, greedy)."""
    step = max(1, len(text) // 2)
    while step >= 1:
        i, shrunk = 0, False
        while i < len(text):
            cand = text[:i] + text[i + step:]
            if not same(cand):
                text, shrunk = cand, True
            else:
                i += step
        if not shrunk:
            step //= 2
    return text


# ---------------------------------------------------------------- checks
def halves(text):
    return split_even(text, 2)


def same(label, ours_fn, ours_arg, ref_arg, size):
    "Compare one case; print it if it differs. True when equal."
    ours, ref = outcome(ours_fn, ours_arg, size), outcome(reference_chunks, ref_arg, size)
    if ours != ref: print(f"MISMATCH {label} size={size}: {describe_diff(ours, ref)}")
    return ours == ref


def check_chapters(texts):
    results = []
    for ch, text in texts.items():
        name = f"chapter {ch}"
        for size in SIZES:
            results += [same(f"{name} len={len(doc)}", splitter.chunk_text, doc, [doc], size) for doc in [text] + halves(text)]
            results.append(same(f"{name} halves corpus", splitter.chunk_corpus, halves(text), halves(text), size))
    bad = results.count(False)
    print(f"chapters: {len(results)} (document, size) comparisons, {bad} mismatches")
    return bad


def check_spans(rng, n):
    bad = 0
    chars = 0
    for k in range(n):
        if k % 2:
            text = random_dense(rng)
        else:
            text = random_text(rng, max_len=rng.choice([300, 3000, 20000]))
        chars += len(text)
        if splitter.punkt_spans(text) != reference_spans(text):
            bad += 1
            small = minimize(text, lambda t: splitter.punkt_spans(t) == reference_spans(t))
            print(f"SPAN MISMATCH {small!r}: ours {splitter.punkt_spans(small)} "
                  f"ref {reference_spans(small)}")
            if bad >= 10:
                break
    print(f"spans: {k + 1} random texts ({chars} chars), {bad} mismatches")
    return bad


def check_chunks(rng, n, min_len=0):
    bad = 0
    chars = 0
    sizes = set()
    errors = 0
    for k in range(n):
        text = random_text(rng, min_len=min_len)
        size = random_size(rng)
        chars += len(text)
        sizes.add(size)
        ours = outcome(splitter.chunk_text, text, size)
        ref = outcome(reference_chunks, [text], size)
        errors += ref[0] != "ok"
        if ours != ref:
            bad += 1
            print(f"CHUNK MISMATCH size={size} len={len(text)}: {describe_diff(ours, ref)}")
            same = lambda t: outcome(splitter.chunk_text, t, size) == outcome(reference_chunks, [t], size)  # noqa
            small = minimize(text, same)
            print(f"   minimal ({len(small)} chars): {small!r:.2000}")
            if bad >= 5:
                break
    print(f"chunks: {k + 1} random texts ({chars} chars), {len(sizes)} distinct sizes, "
          f"{errors} raised an exception in both, {bad} mismatches")
    return bad


EDGE_TEXTS = [
    "", " ", "\n", "\n\n\n", " " * 5000, "\n" * 3000, "\t \n" * 2000, "\x1c" * 300,
    "." * 4000, "a" * 20000, "a." * 5000, ". " * 3000, "<|endoftext|>" * 200, "J. " * 2000,
    "\ud800 lone surrogate. Next.", "   Leading space. " + "word " * 600,
    "x" * 3000 + " " + "Hello. " * 200, "中文。" * 2000, "👍🏽" * 1000, "e\u0301" * 2000,
    ("Sentence one. " * 40 + "\n\n\n") * 30, "(" * 500 + "Hi." + ")" * 500 + " Yo",
]
EDGE_SIZES = [0, -8, 1, 4, 8, 12, 31, 32, 32.0, 36, 500.0, 256, 257, 2048]


def check_edges():
    results = [same(f"edge {text[:40]!r}", splitter.chunk_text, text, [text], size) for text in EDGE_TEXTS for size in EDGE_SIZES]
    bad = results.count(False)
    print(f"edge cases: {len(results)} comparisons, {bad} mismatches")
    return bad


def median_s(f, repeat):
    "Median wall-clock seconds of `f()` over `repeat` runs, after one warm-up run."
    f()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def timing(texts, sizes, repeat):
    "chunk_text against CorpusProcessor on each chapter's halves, as the published run chunks them."
    docs = [h for text in texts.values() for h in halves(text)]
    print(f"timing: {len(docs)} documents ({len(texts)} chapters cut by split_even(text, 2) as the published run cuts them, "
          f"{sum(map(len, docs)):,} characters), median of {repeat}")
    print(f"{'chunk size':>10}  {'CorpusProcessor':>15}  {'chunk_text':>10}  {'speed-up':>8}  chunks")
    for size in sizes:
        ref = median_s(lambda: reference_chunks(docs, size), repeat)
        ours = median_s(lambda: splitter.chunk_corpus(docs, size), repeat)
        n = len(splitter.chunk_corpus(docs, size))
        print(f"{size:>10}  {ref:>14.2f}s  {ours:>9.2f}s  {ref / ours:>7.1f}x  {n}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--spans", type=int, default=20000)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--min-len", type=int, default=0, help="min length of random texts")
    ap.add_argument("--no-chapters", action="store_true", help="skip the edge cases and the chapters")
    ap.add_argument("--data", default=None, help="fastbook-benchmark folder (default: FASTBOOK_BENCH_DATA, then the cache)")
    ap.add_argument("--repeat", type=int, default=5, help="timing: runs per chunk size (0: no timing)")
    ap.add_argument("--timing-sizes", default="256,500,1000", help="timing: chunk sizes, comma-separated")
    a = ap.parse_args()
    t0 = time.time()
    bad = 0
    texts = None if a.no_chapters and not a.repeat else chapter_texts(a.data)
    if a.spans:
        bad += check_spans(random.Random(a.seed), a.spans)
    if a.texts:
        bad += check_chunks(random.Random(a.seed + 1), a.texts, a.min_len)
    if not a.no_chapters:
        bad += check_edges()
        bad += check_chapters(texts)
    print(f"TOTAL mismatches: {bad}  ({time.time() - t0:.0f}s)")
    if a.repeat:
        timing(texts, [int(s) for s in a.timing_sizes.split(",")], a.repeat)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
