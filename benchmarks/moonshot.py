"""Moonshot experiments on fastbook-benchmark (271 chunks of 500 tokens): can an offline CPU retriever reach MRR@10 >= 0.65 and Recall@10 >= 0.90?

Run:  export FASTBOOK_BENCH_DATA=../shared/fastbook-benchmark HF_HUB_OFFLINE=1
      python benchmarks/moonshot.py [experiment names]   -> benchmarks/moonshot_results.md (or moonshot_results-NAMES.md)
Needs nltk and scikit-learn besides the package (both come with its dependencies today).
Score matrices of the neural models are cached in <user cache>/moonshot (delete it to recompute; see TIMINGS in the results).
This is the exploration behind notebook 05's moonshot section; the attempts worth keeping are in the notebook.
Every number in results.md is scored with fastbook_bench.scoring.score_rows. Each question is searched only inside its chapter.
Anything tuned is chosen by leave-one-chapter-out CV (loco_cv / ltr_cv): choose on 6 chapters by MRR@10 + Recall@10, apply to the 7th,
score the concatenated held-out runs. Gold contexts are used only for scoring and for the training side of a CV fold."""
from __future__ import annotations
import os, re, time, json, functools, itertools
from pathlib import Path
import numpy as np

os.environ.setdefault('FASTBOOK_BENCH_DATA', '/work/shared/fastbook-benchmark')
os.environ.setdefault('HF_HUB_OFFLINE', '1')
from fastbook_bench.documents import build_corpus, load_benchmark, load_keywords
from fastbook_bench.scoring import normalize, normalize_all, score_rows, summarize

HERE = Path(__file__).parent
from fastbook_bench.documents import cache_dir
CACHE = cache_dir()/'moonshot'; CACHE.mkdir(parents=True, exist_ok=True)
K = 10

# ---------------------------------------------------------------- data
C = build_corpus(chunk_size=500)
QS = load_benchmark()
KW = load_keywords()
N, NQ = len(C), len(QS)
CHAPTERS = sorted(set(C.chapters))
QCH = np.array([q['chapter'] for q in QS])
SUB = [np.array(C.chapter_indices(q['chapter'])) for q in QS]
MASK = np.full((NQ, N), -np.inf)
for i, s in enumerate(SUB): MASK[i, s] = 0.0
QTEXT = [q['question_text'].strip('"\'') for q in QS]
QKW = [KW[q['chapter'], q['question_number']]['keywords'].strip('"\'') for q in QS]
PN = normalize_all(C.passages)

def _relevance():
    "Per question, per answer component, the set of passages holding one of its contexts (evaluation only)."
    out = []
    for q, s in zip(QS, SUB):
        comps = []
        for ac in q['answer_context']:
            ctx = [normalize(c) for c in ac['context'] if c]
            comps.append({int(i) for i in s if any(c in PN[i] for c in ctx)})
        out.append(comps)
    return out
REL = _relevance()

# ---------------------------------------------------------------- ranking and evaluation
def rank(S:np.ndarray, k:int=K) -> list[list[int]]:
    "Top-k passage indices per query from a (NQ, N) score matrix, within each question's chapter; ties to the lower index."
    out = []
    for i, s in enumerate(S):
        idx = SUB[i]; v = np.asarray(s, dtype=np.float64)[idx]
        out.append([int(idx[o]) for o in np.lexsort((idx, -v))[:k]])
    return out

def per_q(runs, qids=None):
    "Per-question (mrr, recall) arrays, fast (same definitions as fastbook_bench.scoring)."
    qids = range(NQ) if qids is None else qids
    m, r = [], []
    for qi, run in zip(qids, runs):
        ranks = [next((j for j, p in enumerate(run[:K], 1) if p in comp), None) for comp in REL[qi]]
        m.append(0.0 if None in ranks else 1.0 / max(ranks)); r.append(sum(x is not None for x in ranks) / len(ranks))
    return np.array(m), np.array(r)

def fast_eval(S):
    m, r = per_q(rank(S)); return m.mean(), r.mean()

def official(runs, name=''):
    "MRR@10 and Recall@10 through fastbook_bench.scoring.score_rows (the reported numbers)."
    s = summarize(score_rows(QS, [[C.passages[i] for i in r] for r in runs], name, K))[0]
    return s['mrr_at_10'], s['recall_at_10']

def ceiling():
    "A perfect retriever: the smallest set of passages covering every findable component, first."
    runs = []
    for comps, s in zip(REL, SUB):
        comps = [c for c in comps if c]; cand = sorted(set().union(*comps)) if comps else []
        best = next((list(t) for n in range(len(comps) + 1) for t in itertools.combinations(cand, n)
                     if all(c & set(t) for c in comps)), [])
        runs.append(best + [int(i) for i in s if i not in best])
    return official([r[:K] for r in runs], 'ceiling')

def objective(m, r): return m + r  # stated in advance: CV picks the setting maximising MRR@10 + Recall@10 on the 6 training chapters

def loco_cv(candidates:dict, name=''):
    """Leave-one-chapter-out CV. `candidates`: setting -> (NQ, N) score matrix (or a callable giving one).
    Per held-out chapter, choose the setting with the best objective on the other chapters; apply it to the held-out chapter.
    Returns (runs concatenated in question order, {chapter: chosen setting})."""
    keys = list(candidates)
    pq = {}
    for key in keys:
        S = candidates[key]() if callable(candidates[key]) else candidates[key]
        runs = rank(S); pq[key] = (per_q(runs), runs)
    final, chosen = [None] * NQ, {}
    for ch in CHAPTERS:
        tr = QCH != ch
        best = max(keys, key=lambda k: (objective(pq[k][0][0][tr].mean(), pq[k][0][1][tr].mean()), -keys.index(k)))
        chosen[ch] = best
        for i in np.where(~tr)[0]: final[i] = pq[best][1][i]
    return final, chosen

# ---------------------------------------------------------------- tokenisers
from nltk.stem import PorterStemmer, SnowballStemmer
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
_porter = PorterStemmer(); _snow = SnowballStemmer('english')
STOP = frozenset(ENGLISH_STOP_WORDS)
QWORDS = frozenset('what why how which who whom whose when where does do did is are was were can could would should explain describe name give list mention'.split())
_W = re.compile(r'\w+')
_CAMEL = re.compile(r'[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+')

@functools.lru_cache(maxsize=None)
def _stem(w, how): return _porter.stem(w) if how == 'porter' else _snow.stem(w) if how == 'snowball' else w

def make_tokenizer(stem=None, stop=False, split=False, keep_whole=True, nums=True):
    "Tokeniser factory: \\w+ words, optional identifier splitting (snake_case, camelCase), stop words, stemming."
    def tok(text):
        out = []
        for w in _W.findall(text):
            parts = [w]
            if split:
                sub = [p for piece in w.split('_') for p in _CAMEL.findall(piece)]
                if len(sub) > 1: parts = ([w] if keep_whole else []) + sub
            for p in parts:
                p = p.lower()
                if stop and p in STOP: continue
                if not nums and p.isdigit(): continue
                out.append(_stem(p, stem))
        return out
    return tok

BASE_TOK = make_tokenizer()

def clean_query(q, drop=QWORDS): return ' '.join(w for w in re.findall(r'\S+', q) if w.lower().strip('?,.:;"\'()') not in drop)

# ---------------------------------------------------------------- BM25 variants (numpy, exact)
class BM25:
    """BM25 with the variants of Kamphuis et al. (2020) as bm25s implements them:
    robertson (= rank_bm25 Okapi: idf floored at epsilon x mean), lucene, atire, bm25l, bm25+.
    scope='global': statistics over all 271 passages; 'chapter': one index per chapter."""
    def __init__(self, tokenizer=BASE_TOK, method='robertson', k1=1.5, b=0.75, delta=0.5, epsilon=0.25, scope='global'):
        self.tok, self.method, self.k1, self.b, self.delta, self.eps = tokenizer, method, k1, b, delta, epsilon
        self.docs = [tokenizer(p) for p in C.passages]
        self.groups = [np.arange(N)] if scope == 'global' else [np.array(C.chapter_indices(c)) for c in CHAPTERS]
        self.tables = [self._table(g) for g in self.groups]

    def _table(self, g):
        docs = [self.docs[i] for i in g]
        n = len(docs); dl = np.array([len(d) for d in docs], float); avg = dl.mean()
        df, tf = {}, []
        for d in docs:
            c = {}
            for t in d: c[t] = c.get(t, 0) + 1
            tf.append(c)
            for t in c: df[t] = df.get(t, 0) + 1
        m, k1, b, dlt = self.method, self.k1, self.b, self.delta
        if m == 'robertson':
            idf = {t: np.log(n - f + 0.5) - np.log(f + 0.5) for t, f in df.items()}
            floor = self.eps * sum(idf.values()) / max(len(idf), 1)
            idf = {t: (floor if v < 0 else v) for t, v in idf.items()}
        elif m == 'lucene': idf = {t: np.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        elif m == 'atire': idf = {t: np.log(n / f) for t, f in df.items()}
        elif m == 'bm25l': idf = {t: np.log((n + 1) / (f + 0.5)) for t, f in df.items()}
        elif m == 'bm25+': idf = {t: np.log((n + 1) / f) for t, f in df.items()}
        else: raise ValueError(m)
        norm = 1 - b + b * dl / avg
        w = {}  # term -> per-doc weight vector
        for t in df:
            x = np.array([c.get(t, 0) for c in tf], float)
            if m == 'bm25l':
                ct = x / norm; v = np.where(x > 0, (k1 + 1) * (ct + dlt) / (k1 + ct + dlt), 0)
            elif m == 'bm25+': v = np.where(x > 0, (k1 + 1) * x / (k1 * norm + x) + dlt, 0)
            elif m == 'lucene': v = x / (x + k1 * norm)
            else: v = (k1 + 1) * x / (x + k1 * norm)
            w[t] = idf[t] * v
        return w

    def score_matrix(self, queries) -> np.ndarray:
        S = np.zeros((len(queries), N))
        for qi, q in enumerate(queries):
            toks = self.tok(q)
            for g, w in zip(self.groups, self.tables):
                for t in toks:
                    if t in w: S[qi, g] += w[t]
        return S

# ---------------------------------------------------------------- neural scores (cached in ./cache)
def _cached(name, build):
    fn = CACHE/f'{name}.npy'
    if fn.is_file(): return np.load(fn)
    a = build(); np.save(fn, a); return a

@functools.lru_cache(maxsize=None)
def sentence_model():
    from fastbook_bench.single_vector import load_sentence_model, BUNDLED_MODEL
    import torch; torch.manual_seed(0)
    return load_sentence_model(BUNDLED_MODEL, device='cpu')[0]

def dense_full(queries, tag):
    "MiniLM cosine of each query to each whole passage (SingleVectorRetriever: passages truncated at 256 word pieces)."
    def build():
        from fastbook_bench.single_vector import SingleVectorRetriever, BUNDLED_MODEL
        r = SingleVectorRetriever(C.passages, encoder=sentence_model(), model=BUNDLED_MODEL)
        return np.stack(list(r.scores(list(queries))))
    return _cached(f'dense_full_{tag}', build)

def windows(text, size, stride):
    "Word windows of `size` words every `stride` words (whole text if shorter)."
    ws = re.findall(r'\S+', text)
    if len(ws) <= size: return [text]
    return [' '.join(ws[i:i + size]) for i in range(0, max(len(ws) - size, 0) + stride, stride) if ws[i:i + size]]

def window_embeddings(size, stride):
    def build():
        wins, owner = [], []
        for i, p in enumerate(C.passages):
            for w in windows(p, size, stride): wins.append(w); owner.append(i)
        e = sentence_model().encode(wins, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        return np.concatenate([np.array(owner, float)[:, None], e], 1)
    a = _cached(f'win_emb_{size}_{stride}', build)
    return a[:, 0].astype(int), a[:, 1:]

def query_embeddings(queries, tag):
    return _cached(f'qemb_{tag}', lambda: sentence_model().encode(list(queries), batch_size=32, normalize_embeddings=True, convert_to_numpy=True))

def dense_maxp(queries, tag, size=128, stride=64, agg='max'):
    "MaxP: a passage scores the best cosine among its word windows (fixes MiniLM's 256-piece truncation)."
    owner, E = window_embeddings(size, stride)
    Q = query_embeddings(queries, tag)
    sims = Q @ E.T
    S = np.full((len(Q), N), -1.0)
    for p in range(N):
        v = sims[:, owner == p]
        S[:, p] = v.max(1) if agg == 'max' else np.sort(v, 1)[:, -2:].mean(1) if agg == 'top2' else v.mean(1)
    return S

def colbert_scores(queries, tag):
    "ColBERTRetriever (bundled MiniLM + seeded projection) MaxSim scores, every passage."
    def build():
        from fastbook_bench.colbert import ColBERTRetriever, BUNDLED_COLBERT
        r = ColBERTRetriever(C.passages, model=BUNDLED_COLBERT)
        S = np.stack(list(r.scores(list(queries))))
        return np.where(np.isfinite(S), S, -1e9)
    return _cached(f'colbert_{tag}', build)

# ---------------------------------------------------------------- fusion helpers
def within(S, how):
    "Normalise each row over its question's chapter: 'minmax', 'z', or 'rank' (1/(60+rank), RRF)."
    out = np.zeros_like(S, dtype=float)
    for i, s in enumerate(SUB):
        v = S[i, s].astype(float)
        if how == 'minmax': out[i, s] = (v - v.min()) / (v.max() - v.min() + 1e-12)
        elif how == 'z': out[i, s] = (v - v.mean()) / (v.std() + 1e-12)
        elif how.startswith('rrf'):
            k = float(how[3:] or 60); r = np.empty(len(v)); r[np.lexsort((s, -v))] = np.arange(1, len(v) + 1)
            out[i, s] = 1.0 / (k + r)
        else: raise ValueError(how)
    return out

def fuse(mats, weights=None, how='minmax'):
    weights = [1.0] * len(mats) if weights is None else weights
    return sum(w * within(M, how) for w, M in zip(weights, mats))

def neighbours(S, lam, how='minmax'):
    "Each passage's (normalised) score plus lam x the mean of its same-chapter neighbours' scores (chunks overlap by 64 tokens)."
    Z = within(S, how) if how else S.copy()
    out = Z.copy()
    ch = np.array(C.chapters)
    for p in range(N):
        nb = [j for j in (p - 1, p + 1) if 0 <= j < N and ch[j] == ch[p]]
        out[:, p] = Z[:, p] + lam * Z[:, nb].mean(1)
    return out


# ---------------------------------------------------------------- finer dense units
def sentences(text):
    "Punkt sentences of a passage (code lines stay inside their sentence); empty pieces dropped."
    from fastbook_bench.documents import punkt_spans
    return [text[a:b].strip() for a, b in punkt_spans(text) if text[a:b].strip()] or [text]

def sentence_embeddings(group=1):
    "MiniLM embeddings of every run of `group` consecutive sentences of every passage."
    def build():
        units, owner = [], []
        for i, p in enumerate(C.passages):
            ss = sentences(p)
            for j in range(max(1, len(ss) - group + 1)): units.append(' '.join(ss[j:j + group])); owner.append(i)
        e = sentence_model().encode(units, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        return np.concatenate([np.array(owner, float)[:, None], e], 1)
    a = _cached(f'sent_emb_{group}', build)
    return a[:, 0].astype(int), a[:, 1:]

def dense_units(queries, tag, owner, E, agg='max'):
    Q = query_embeddings(queries, tag); sims = Q @ E.T
    S = np.full((len(Q), N), -1.0)
    for p in range(N):
        v = sims[:, owner == p]
        S[:, p] = v.max(1) if agg == 'max' else np.sort(v, 1)[:, -3:].mean(1) if agg == 'top3' else v.mean(1)
    return S

def token_embeddings(win=256, stride=None, layer=-1):
    "Raw MiniLM last-layer token vectors (L2-normalised, float16) of every passage, encoded in windows of <= win word pieces every `stride` (default: win, no overlap)."
    def build():
        import torch
        st = sentence_model(); tok, bert = st.tokenizer, st[0].auto_model.eval()
        vecs, owner = [], []
        for i, p in enumerate(C.passages):
            ids = tok(p, add_special_tokens=False)['input_ids']
            step = (stride or win) - 2 if stride is None else stride
            for a in range(0, max(len(ids) - (win - 2 - step), 1), step):
                piece = [tok.cls_token_id] + ids[a:a + win - 2] + [tok.sep_token_id]
                with torch.no_grad(): h = _layer(bert(input_ids=torch.tensor([piece]), output_hidden_states=True), layer)[0, 1:-1]
                h = torch.nn.functional.normalize(h, dim=-1).numpy().astype(np.float16)
                vecs.append(h); owner += [i] * len(h)
        return np.concatenate(vecs), np.array(owner)
    fn = CACHE/((f'tok_emb_{win}' if stride is None else f'tok_emb_{win}_{stride}') + ('' if layer == -1 else f'_L{layer}') + '.npz')
    if not fn.is_file():
        E, owner = build(); np.savez(fn, E=E, owner=owner)
    z = np.load(fn); return z['owner'], z['E']

_PUNCT = re.compile(r'^\W+$')

def _layer(out, layer):
    "Hidden states of `layer` (-1: last; 'mean': mean of layers 1..6)."
    hs = out.hidden_states
    return hs[-1] if layer == -1 else sum(hs[1:]) / (len(hs) - 1) if layer == 'mean' else hs[layer]

def maxsim_tokens(queries, tag, win=256, stride=None, layer=-1):
    "Per query word piece, its best cosine in each passage (raw MiniLM), with the word pieces: ([NQ] arrays (T_q, N), [NQ] token lists)."
    fn = CACHE/((f'maxsim_tok_{win}_{tag}' if stride is None else f'maxsim_tok_{win}_{stride}_{tag}') + ('' if layer == -1 else f'_L{layer}') + '.npz')
    if not fn.is_file():
        import torch
        owner, E = token_embeddings(win, stride, layer); E = E.astype(np.float32)
        st = sentence_model(); tok, bert = st.tokenizer, st[0].auto_model.eval()
        bounds = np.searchsorted(owner, np.arange(N + 1))
        mats, words = [], []
        for q in queries:
            enc = tok(q, return_tensors='pt', truncation=True, max_length=64)
            with torch.no_grad(): h = _layer(bert(**enc, output_hidden_states=True), layer)[0, 1:-1]
            words.append(tok.convert_ids_to_tokens(enc['input_ids'][0, 1:-1]))
            sims = torch.nn.functional.normalize(h, dim=-1).numpy() @ E.T
            mats.append(np.maximum.reduceat(sims, bounds[:-1], axis=1))
        np.savez(fn, sims=np.concatenate(mats), lens=np.array([len(w) for w in words]), words=np.array(sum(words, []), dtype=object))
    z = np.load(fn, allow_pickle=True)
    cut = np.cumsum(z['lens'])[:-1]
    return np.split(z['sims'], cut), [list(w) for w in np.split(z['words'], cut)]

@functools.lru_cache(maxsize=None)
def wordpiece_idf():
    "Okapi-style idf of each MiniLM word piece over the 271 passages (lucene form, always > 0)."
    tok = sentence_model().tokenizer
    df = {}
    for p in C.passages:
        for t in set(tok.tokenize(p)): df[t] = df.get(t, 0) + 1
    return lambda t: float(np.log(1 + (N - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)))

def maxsim_weighted(queries, tag, weight='stop', win=256, stride=None, layer=-1):
    "Sum over query word pieces of weight x best cosine: weight 'stop' (1, 0 for stop words/punctuation), 'idf', or 'stop*idf'."
    mats, words = maxsim_tokens(queries, tag, win, stride, layer)
    idf = wordpiece_idf()
    S = np.zeros((len(queries), N))
    for qi, (m, ws) in enumerate(zip(mats, words)):
        keep = np.array([0.0 if (_PUNCT.match(w) or ('stop' in weight and w in STOP)) else 1.0 for w in ws])
        if keep.sum() == 0: keep[:] = 1
        if 'idf' in weight: keep *= np.array([idf(w) for w in ws])
        S[qi] = keep @ m
    return S

# ---------------------------------------------------------------- pseudo-relevance feedback (RM3-style) on BM25
def bm25_weighted(bm:BM25, qweights:list[dict]) -> np.ndarray:
    "BM25 scores for weighted bags of query terms."
    S = np.zeros((len(qweights), N))
    for qi, qw in enumerate(qweights):
        for g, w in zip(bm.groups, bm.tables):
            for t, x in qw.items():
                if t in w: S[qi, g] += x * w[t]
    return S

def rm3(bm:BM25, queries, first:np.ndarray, fb_docs=5, fb_terms=10, orig_weight=0.6):
    """RM3: the query's terms (weight orig_weight, normalised) mixed with the fb_terms most probable terms of the relevance model
    built from the fb_docs best passages of `first` (within the chapter), each passage weighted by its softmax-free normalised score."""
    runs = rank(first + MASK, fb_docs)
    out = []
    for qi, q in enumerate(queries):
        qt = {}
        for t in bm.tok(q): qt[t] = qt.get(t, 0) + 1
        z = sum(qt.values()) or 1; qt = {t: v / z for t, v in qt.items()}
        sc = np.array([first[qi, p] for p in runs[qi]], float); sc = sc - sc.min() + 1e-6; sc /= sc.sum()
        rel = {}
        for p, wgt in zip(runs[qi], sc):
            d = [t for t in bm.docs[p] if t not in STOP]; L = len(d) or 1
            for t in d: rel[t] = rel.get(t, 0) + wgt / L
        top = dict(sorted(rel.items(), key=lambda kv: -kv[1])[:fb_terms]); z = sum(top.values()) or 1
        mix = {t: orig_weight * qt.get(t, 0) + (1 - orig_weight) * top.get(t, 0) / z for t in set(qt) | set(top)}
        out.append(mix)
    return bm25_weighted(bm, out)

# ---------------------------------------------------------------- all signals
SPLIT_TOK = make_tokenizer(split=True)

@functools.lru_cache(maxsize=None)
def _signals():
    tk, ps = SPLIT_TOK, make_tokenizer(stem='porter', stop=True)
    bm, bp = BM25(tk), BM25(ps)
    s = {'bm25_q': bm.score_matrix(QTEXT), 'bm25_kw': bm.score_matrix(QKW), 'bm25ps_q': bp.score_matrix(QTEXT),
         'dense_full_q': dense_full(QTEXT, 'q'), 'maxp128_q': dense_maxp(QTEXT, 'q', 128, 64), 'maxp64_q': dense_maxp(QTEXT, 'q', 64, 32),
         'maxp64_kw': dense_maxp(QKW, 'kw', 64, 32), 'sent1_q': dense_units(QTEXT, 'q', *sentence_embeddings(1)),
         'colbert_q': colbert_scores(QTEXT, 'q'), 'ms256idf_q': maxsim_weighted(QTEXT, 'q', 'idf', 256),
         'ms256_kw': maxsim_weighted(QKW, 'kw', 'stop', 256), 'ms128idf_q': maxsim_weighted(QTEXT, 'q', 'idf', 128),
         'ms64all_q': maxsim_weighted(QTEXT, 'q', 'all', 64), 'ms32all_q': maxsim_weighted(QTEXT, 'q', 'all', 32),
         'ms32idf_q': maxsim_weighted(QTEXT, 'q', 'idf', 32)}
    return {k: np.where(np.isfinite(v), v, -1e9).astype(np.float64) for k, v in s.items()}

def all_signals(): return dict(_signals())

# ---------------------------------------------------------------- learning to rank, leave-one-chapter-out
LABEL = np.zeros((NQ, N))
for i, comps in enumerate(REL):
    for c in comps:
        for p in c: LABEL[i, p] = 1.0

def features(sig:dict, names, kinds=('z', 'minmax', 'rrf1'), nb=True):
    "Feature tensor (NQ, N, F): per signal, its within-chapter normalisations, and optionally the neighbours' mean z."
    fs, fnames = [], []
    ch = np.array(C.chapters)
    for n in names:
        for k in kinds:
            fs.append(within(sig[n], k)); fnames.append(f'{n}:{k}')
        if nb:
            Z = within(sig[n], 'z'); out = np.zeros_like(Z)
            for p in range(N):
                js = [j for j in (p - 1, p + 1) if 0 <= j < N and ch[j] == ch[p]]
                out[:, p] = Z[:, js].max(1)
            fs.append(out); fnames.append(f'{n}:nbmax')
    return np.stack(fs, -1), fnames

def ltr_cv(X, model_fn, name=''):
    "Train on the (question, passage) pairs of 6 chapters, score the 7th; returns the (NQ, N) score matrix of held-out predictions."
    S = np.full((NQ, N), -1e9)
    for ch in CHAPTERS:
        tr = np.where(QCH != ch)[0]; te = np.where(QCH == ch)[0]
        Xtr = np.concatenate([X[i, SUB[i]] for i in tr]); ytr = np.concatenate([LABEL[i, SUB[i]] for i in tr])
        gtr = np.concatenate([[i] * len(SUB[i]) for i in tr])
        m = model_fn(); m.fit(Xtr, ytr, groups=gtr) if hasattr(m, 'fit_groups') else m.fit(Xtr, ytr)
        for i in te: S[i, SUB[i]] = m.decision_function(X[i, SUB[i]]) if hasattr(m, 'decision_function') else m.predict_proba(X[i, SUB[i]])[:, 1]
    return S

# ---------------------------------------------------------------- supervised fine-tuning of MiniLM, leave-one-chapter-out
def window_units(size=64, stride=32):
    wins, owner = [], []
    for i, p in enumerate(C.passages):
        for w in windows(p, size, stride): wins.append(w); owner.append(i)
    return wins, np.array(owner)

def finetune_fold(held_out, epochs=1, lr=2e-5, batch=16, size=64, stride=32, seed=0, queries=None, tag='q'):
    """Fine-tune a fresh MiniLM on the questions of the other 6 chapters (MultipleNegativesRankingLoss, scale 20:
    question -> its gold contexts, with in-batch negatives plus one hard negative per question = the base model's best window
    from a passage of the same chapter holding no context), then MaxP-score the held-out chapter's passages (windows size/stride)."""
    import torch, random
    from sentence_transformers import SentenceTransformer
    from fastbook_bench.single_vector import bundled_model_path
    queries = QTEXT if queries is None else queries
    torch.manual_seed(seed); random.seed(seed); np.random.seed(seed)
    model = SentenceTransformer(str(bundled_model_path()), device='cpu')
    wins, owner = window_units(size, stride)
    base_owner, base_E = window_embeddings(size, stride); base_Q = query_embeddings(queries, tag)
    triples = []
    for i in np.where(QCH != held_out)[0]:
        neg_w = [j for j in np.where(np.isin(base_owner, SUB[i]))[0] if LABEL[i, base_owner[j]] == 0]
        neg = wins[neg_w[int(np.argmax(base_E[neg_w] @ base_Q[i]))]]
        for ac in QS[i]['answer_context']:
            ctx = ' '.join(c for c in ac['context'] if c).strip()
            if ctx: triples.append((queries[i], ctx, neg))
    rng = random.Random(seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    steps = epochs * ((len(triples) + batch - 1) // batch); warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    def emb(texts):
        f = model.tokenize(texts); f = {k: v for k, v in f.items()}
        return torch.nn.functional.normalize(model(f)['sentence_embedding'], dim=-1)
    for ep in range(epochs):
        rng.shuffle(triples)
        for a in range(0, len(triples), batch):
            b = triples[a:a + batch]
            qv, pv, nv = emb([t[0] for t in b]), emb([t[1] for t in b]), emb([t[2] for t in b])
            # same question may appear twice in a batch (several components): mask its other positives out of the negatives
            same = torch.tensor([[x[0] == y[0] and i != j for j, y in enumerate(b)] for i, x in enumerate(b)])
            sims = torch.cat([(qv @ pv.T).masked_fill(same, -1e4), qv @ nv.T], 1) * 20
            loss = torch.nn.functional.cross_entropy(sims, torch.arange(len(b)))
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    model.eval()
    te = np.where(QCH == held_out)[0]
    idx = np.where(np.isin(owner, C.chapter_indices(held_out)))[0]
    with torch.no_grad():
        E = model.encode([wins[j] for j in idx], batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        Q = model.encode([queries[i] for i in te], batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    sims = Q @ E.T
    S = np.full((len(te), N), -1.0)
    for p in C.chapter_indices(held_out): S[:, p] = sims[:, owner[idx] == p].max(1)
    return te, S

def finetuned_maxp(epochs=1, size=64, stride=32, lr=2e-5):
    def build():
        S = np.full((NQ, N), -1.0)
        for ch in CHAPTERS:
            te, s = finetune_fold(ch, epochs=epochs, size=size, stride=stride, lr=lr); S[te] = s
            print(f'  fold {ch} done', flush=True)
        return S
    return _cached(f'ft_maxp_{size}_{stride}_e{epochs}_lr{lr}', build)

def features2(sig:dict, names, kinds=('z', 'rrf1')):
    "Per signal: within-chapter normalisations plus the previous and the next chunk's z (0 at a chapter edge)."
    fs = []
    ch = np.array(C.chapters)
    for n in names:
        for k in kinds: fs.append(within(sig[n], k))
        Z = within(sig[n], 'z')
        for d in (-1, 1):
            out = np.zeros_like(Z)
            for p in range(N):
                j = p + d
                if 0 <= j < N and ch[j] == ch[p]: out[:, p] = Z[:, j]
            fs.append(out)
    return np.stack(fs, -1)

class PairwiseLR:
    "RankSVM-style linear ranker: logistic regression on feature differences of (relevant, non-relevant) pairs of one question."
    fit_groups = True
    def __init__(self, C=1.0): self.C = C
    def fit(self, X, y, groups):
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler
        self.sc = StandardScaler().fit(X); X = self.sc.transform(X)
        D = []
        for g in np.unique(groups):
            m = groups == g; pos, neg = X[m & (y == 1)], X[m & (y == 0)]
            for p in pos: D.append(p - neg)
        D = np.concatenate(D); Xd = np.concatenate([D, -D]); yd = np.r_[np.ones(len(D)), np.zeros(len(D))]
        self.lr = LogisticRegression(C=self.C, fit_intercept=False, max_iter=5000).fit(Xd, yd); return self
    def decision_function(self, X): return self.sc.transform(X) @ self.lr.coef_[0]

# ================================================================ experiments: each returns rows (experiment, method, mrr, recall, notes)
def row(exp, method, runs, notes=''):
    m, r = official(runs, method)
    return dict(experiment=exp, method=method, mrr=m, recall=r, notes=notes)

def S_row(exp, method, S, notes=''): return row(exp, method, rank(S + MASK), notes)

def fmt_chosen(chosen): return '; '.join(f'ch{c}: {v}' for c, v in chosen.items())

def cv_row(exp, method, cands, notes=''):
    runs, chosen = loco_cv(cands)
    return row(exp, method, runs, (notes + ' ' if notes else '') + 'CV chose ' + fmt_chosen(chosen))

def e_baselines():
    from fastbook_bench.fts import FTS5Retriever, BM25Retriever
    subs = [list(s) for s in SUB]
    fts = FTS5Retriever(C.passages, labels=C.chapters).search(QKW, k=K, subsets=subs)
    bm = BM25Retriever(C.passages).search(QTEXT, k=K, subsets=subs)
    return [row('baseline', 'fts5 (keywords)', [[i for i, _ in x] for x in fts], 'uses the keywords'),
            row('baseline', 'bm25 rank_bm25 (question)', [[i for i, _ in x] for x in bm]),
            S_row('baseline', 'single_vector MiniLM', dense_full(QTEXT, 'q')),
            S_row('baseline', 'colbert MiniLM+seeded projection', colbert_scores(QTEXT, 'q')),
            dict(experiment='baseline', method='ceiling (perfect retriever)', mrr=ceiling()[0], recall=ceiling()[1], notes='')]

TOKS = {'plain lower-cased words': BASE_TOK, 'porter': make_tokenizer(stem='porter'), 'snowball': make_tokenizer(stem='snowball'),
        'stop': make_tokenizer(stop=True), 'porter+stop': make_tokenizer(stem='porter', stop=True),
        'split ids': SPLIT_TOK, 'split ids+porter+stop': make_tokenizer(split=True, stem='porter', stop=True),
        'split ids (parts only)+porter+stop': make_tokenizer(split=True, keep_whole=False, stem='porter', stop=True),
        'porter+stop, no numbers': make_tokenizer(stem='porter', stop=True, nums=False)}
QFORMS = {'question': QTEXT, 'question minus question words': [clean_query(q) for q in QTEXT], 'keywords': QKW,
          'question + keywords': [a + ' ' + b for a, b in zip(QTEXT, QKW)]}

def e_bm25_tokens():
    "Tokenisation x query form, rank-bm25 Okapi k1=1.5 b=0.75 (fixed defaults)."
    out = []
    for tn, t in TOKS.items():
        bm = BM25(t)
        for qn, qq in QFORMS.items():
            out.append(S_row('bm25 tokens/query', f'{tn} | {qn}', bm.score_matrix(qq), 'uses the keywords' if 'keywords' in qn else ''))
    out.append(S_row('bm25 tokens/query', 'split ids | question, per-chapter index (IDF within chapter)', BM25(SPLIT_TOK, scope='chapter').score_matrix(QTEXT)))
    return out

def e_bm25_variants():
    "bm25s methods x k1 x b, chosen by LOCO-CV (per method, and method too)."
    out, every = [], {}
    for tn in ['plain lower-cased words', 'split ids', 'porter+stop']:
        for m in ['robertson', 'lucene', 'atire', 'bm25l', 'bm25+']:
            c = {(tn, m, k1, b): BM25(TOKS[tn], method=m, k1=k1, b=b).score_matrix(QTEXT) + MASK
                 for k1 in [0.6, 0.9, 1.2, 1.5, 2.0, 3.0] for b in [0.3, 0.5, 0.75, 0.9, 1.0]}
            every.update(c)
            if tn == 'split ids': out.append(cv_row('bm25 variants (CV)', f'{m}, k1/b by CV, split ids | question', c))
    out.append(cv_row('bm25 variants (CV)', 'tokeniser x method x k1 x b by CV | question', every))
    return out

def e_bm25_extras():
    out = []
    bi = lambda base: (lambda x: (lambda w: [a + '_' + b for a, b in zip(w, w[1:])])(base(x)))
    unibi = lambda base: (lambda x: (lambda w: w + [a + '_' + b for a, b in zip(w, w[1:])])(base(x)))
    B = BM25(SPLIT_TOK).score_matrix(QTEXT)
    out.append(S_row('bm25 extras', 'word bigrams only', BM25(bi(BASE_TOK)).score_matrix(QTEXT)))
    out.append(S_row('bm25 extras', 'unigrams + bigrams (stop words removed)', BM25(unibi(make_tokenizer(stop=True))).score_matrix(QTEXT)))
    Bb = BM25(bi(BASE_TOK)).score_matrix(QTEXT)
    out.append(cv_row('bm25 extras', 'bm25 + w x bigram bm25 (minmax), w by CV', {w: fuse([B, Bb], [1, w]) + MASK for w in [0, 0.1, 0.2, 0.5, 1]}))
    # lexical MaxP: BM25 over word windows, passage = best window
    for size, stride in [(32, 16), (64, 32), (128, 64)]:
        wins, owner = window_units(size, stride)
        bw = BM25.__new__(BM25); bw.__dict__.update(tok=SPLIT_TOK, method='robertson', k1=1.5, b=0.75, delta=0.5, eps=0.25)
        bw.docs = [SPLIT_TOK(w) for w in wins]; tab = bw._table(np.arange(len(wins)))
        Sw = np.array([[0.0] * len(wins)] * NQ)
        for qi, q in enumerate(QTEXT):
            for t in SPLIT_TOK(q):
                if t in tab: Sw[qi] += tab[t]
        S = np.stack([Sw[:, owner == p].max(1) for p in range(N)], 1)
        out.append(S_row('bm25 extras', f'lexical MaxP, windows {size}/{stride} words', S))
        out.append(S_row('bm25 extras', f'lexical MaxP {size}/{stride} RRF60 passage bm25', fuse([B, S], how='rrf60')))
    # structure: section headings and emphasised spans
    from fastbook_bench.documents import chapter_texts
    T = chapter_texts(); H = re.compile(r'^(#{1,6})\s+(.*)$', re.M)
    def heads(i):
        t, st, stack = T[C.chapters[i]], C.starts[i], {}
        for m in H.finditer(t[:st]):
            lvl = len(m.group(1)); stack = {k: v for k, v in stack.items() if k < lvl}; stack[lvl] = m.group(2)
        return ' '.join(stack[k] for k in sorted(stack))
    EMP = re.compile(r'\*\*?([^*\n]{2,60})\*\*?|`([^`\n]{1,60})`')
    for name, fld in [('section headings above the chunk', [heads(i) for i in range(N)]),
                      ('emphasised/code spans', [' '.join(a or b for a, b in EMP.findall(p)) for p in C.passages])]:
        bf = BM25.__new__(BM25); bf.__dict__.update(tok=SPLIT_TOK, method='robertson', k1=1.5, b=0.75, delta=0.5, eps=0.25, groups=[np.arange(N)])
        bf.docs = [SPLIT_TOK(f) for f in fld]; bf.tables = [bf._table(np.arange(N))]
        F = bf.score_matrix(QTEXT)
        out.append(cv_row('bm25 extras', f'bm25 + w x field bm25 ({name}), w by CV', {w: fuse([B, F], [1, w]) + MASK for w in [0, 0.1, 0.2, 0.3, 0.5]}))
        bf.docs = [SPLIT_TOK(f + ' ' + p) for f, p in zip(fld, C.passages)]; bf.tables = [bf._table(np.arange(N))]
        out.append(S_row('bm25 extras', f'{name} prepended to the chunk', bf.score_matrix(QTEXT)))
    return out

def e_rm3():
    bm = BM25(SPLIT_TOK); B = bm.score_matrix(QTEXT)
    c = {(fd, ft, ow): rm3(bm, QTEXT, B, fd, ft, ow) + MASK for fd in [3, 5, 10] for ft in [10, 20] for ow in [0.5, 0.7, 0.9]}
    c[('none',)] = B + MASK
    return [cv_row('prf', 'RM3 on bm25 (fb docs, fb terms, original weight by CV; "none" allowed)', c)]

def e_dense():
    out = [S_row('dense', 'MiniLM whole chunk (truncated at 256 pieces) | keywords', dense_full(QKW, 'kw'), 'uses the keywords')]
    qk = [a + ' ' + b for a, b in zip(QTEXT, QKW)]
    for size, stride in [(128, 64), (64, 32)]:
        out.append(S_row('dense', f'MiniLM MaxP, windows {size}/{stride} words | question', dense_maxp(QTEXT, 'q', size, stride)))
        out.append(S_row('dense', f'MiniLM MaxP, windows {size}/{stride} words | keywords', dense_maxp(QKW, 'kw', size, stride), 'uses the keywords'))
    out.append(S_row('dense', 'MiniLM MaxP 64/32 | question + keywords', dense_maxp(qk, 'qkw', 64, 32), 'uses the keywords'))
    for g in [1, 2]:
        for agg in ['max', 'top3']:
            out.append(S_row('dense', f'MiniLM over runs of {g} sentence(s), {agg} | question', dense_units(QTEXT, 'q', *sentence_embeddings(g), agg=agg)))
    out.append(S_row('dense', 'MiniLM sentences, max | question + keywords', dense_units(qk, 'qkw', *sentence_embeddings(1)), 'uses the keywords'))
    ft = CACHE/'ft_maxp_64_32_e1_lr2e-05.npy'
    if ft.is_file() or os.environ.get('MOONSHOT_FINETUNE'):
        out.append(S_row('dense', "MiniLM fine-tuned per fold (LOCO: the 6 other chapters' questions -> gold contexts, MNRL, 1 epoch, lr 2e-5, batch 16) MaxP 64/32",
                         finetuned_maxp(1), 'supervised on the 6 training chapters; ~28 min uncached'))
    return out

def e_late_interaction():
    out = [S_row('late interaction', 'ColBERT bundled | keywords', colbert_scores(QKW, 'kw'), 'uses the keywords')]
    cands = {}
    for win, st in [(256, None), (128, None), (64, None), (32, None), (16, None), (8, None), (32, 15)]:
        for w in ['stop', 'idf', 'all']:
            S = maxsim_weighted(QTEXT, 'q', w, win, st); cands[(win, st, w)] = S + MASK
            out.append(S_row('late interaction', f'raw MiniLM MaxSim, windows of {win} pieces' + (f' stride {st}' if st else '') + f', query weights {w} | question', S))
    out.append(cv_row('late interaction', 'raw MiniLM MaxSim, window x weights by CV | question', cands))
    for w in ['stop', 'idf']:
        out.append(S_row('late interaction', f'raw MiniLM MaxSim 256, {w} | keywords', maxsim_weighted(QKW, 'kw', w, 256), 'uses the keywords'))
        out.append(S_row('late interaction', f'raw MiniLM MaxSim 128, {w} | keywords', maxsim_weighted(QKW, 'kw', w, 128), 'uses the keywords'))
        out.append(S_row('late interaction', f'raw MiniLM MaxSim 256, {w} | question + keywords',
                         maxsim_weighted([a + ' ' + b for a, b in zip(QTEXT, QKW)], 'qkw', w, 256), 'uses the keywords'))
    for layer in [3, 'mean']:
        for w in ['stop', 'idf', 'all']:
            out.append(S_row('late interaction', f'raw MiniLM MaxSim 32, layer {layer}, {w} | question', maxsim_weighted(QTEXT, 'q', w, 32, layer=layer)))
    mats, words = maxsim_tokens(QTEXT, 'q', 32)
    for mode in ['z', 'minmax']:
        S = np.zeros((NQ, N))
        for qi, (m, ws) in enumerate(zip(mats, words)):
            v = m[:, SUB[qi]].astype(float)
            x = (v - v.mean(1, keepdims=True)) / (v.std(1, keepdims=True) + 1e-6) if mode == 'z' else (v - v.min(1, keepdims=True)) / (np.ptp(v, 1, keepdims=True) + 1e-6)
            S[qi, SUB[qi]] = x.sum(0)
        out.append(S_row('late interaction', f'raw MiniLM MaxSim 32, each query piece {mode}-normalised over the chapter', S))
    return out

POOL = ['bm25_q', 'bm25_kw', 'bm25ps_q', 'maxp64_q', 'maxp128_q', 'sent1_q', 'colbert_q', 'ms256idf_q', 'ms256_kw', 'ms64all_q', 'ms32all_q', 'ms32idf_q']
KWS = lambda names: 'uses the keywords' if any('kw' in n for n in names) else ''

def e_fusion():
    s = all_signals(); out = []
    fixed = [('the four package retrievers (bm25, fts5 keywords as bm25, single_vector, colbert)', ['bm25_q', 'bm25_kw', 'dense_full_q', 'colbert_q']),
             ('bm25 + single_vector', ['bm25_q', 'dense_full_q']), ('bm25 + colbert', ['bm25_q', 'colbert_q']),
             ('bm25 + dense MaxP 64', ['bm25_q', 'maxp64_q']), ('bm25 + MaxSim32', ['bm25_q', 'ms32all_q']),
             ('bm25 + MaxSim32 + dense MaxP 64', ['bm25_q', 'ms32all_q', 'maxp64_q']),
             ('bm25 + bm25 kw + MaxSim32 + MaxSim32 idf + dense MaxP 64', ['bm25_q', 'bm25_kw', 'ms32all_q', 'ms32idf_q', 'maxp64_q']),
             ('all 12 pool signals', POOL)]
    for name, names in fixed:
        for how in ['rrf60', 'minmax', 'z']:
            out.append(S_row('fusion fixed', f'{how}: {name}', fuse([s[n] for n in names], how=how), KWS(names)))
    Z = {h: {k: within(s[k], h) for k in POOL} for h in ['rrf60', 'minmax', 'z']}
    cands = {(h, c): sum(Z[h][x] for x in c) + MASK for n in range(1, 5) for c in itertools.combinations(POOL, n) for h in Z}
    out.append(cv_row('fusion CV', 'subset (1-4 of 12 signals) x normalisation by CV', cands, 'may use the keywords'))
    noKW = [p for p in POOL if 'kw' not in p]
    out.append(cv_row('fusion CV', 'subset (1-4 of 10 keyword-free signals) x normalisation by CV',
                      {k: v for k, v in cands.items() if all(x in noKW for x in k[1])}))
    names = ['bm25_q', 'bm25_kw', 'ms32all_q', 'ms64all_q', 'maxp64_q']
    out.append(cv_row('fusion CV', 'z-score weights in {0,.5,1,2} for bm25, bm25 kw, MaxSim32, MaxSim64, MaxP64 by CV',
                      {w: fuse([s[n] for n in names], list(w), 'z') + MASK for w in itertools.product([0, .5, 1, 2], repeat=5) if any(w)}, 'may use the keywords'))
    # passage neighbours on top of fusion, jointly chosen
    small = ['bm25_q', 'bm25_kw', 'maxp64_q', 'sent1_q', 'ms64all_q', 'ms32all_q', 'ms32idf_q']
    c2 = {}
    for n in range(1, 5):
        for c in itertools.combinations(small, n):
            for h in ['rrf60', 'z']:
                F = sum(Z[h][x] for x in c)
                for lam in [0, 0.1, 0.2, 0.3]: c2[(h, c, lam)] = (neighbours(F, lam, 'minmax') if lam else F) + MASK
    out.append(cv_row('fusion CV', 'subset (1-4 of 7) x normalisation x neighbour weight lam in {0,.1,.2,.3} by CV', c2, 'may use the keywords'))
    out.append(S_row('fusion fixed', 'IN-SAMPLE reference (not honest): rrf60 of the set CV picked in 6/7 folds: bm25 kw + MaxSim64 all + MaxSim32 all + MaxSim32 idf',
                     fuse([s[n] for n in ['bm25_kw', 'ms64all_q', 'ms32all_q', 'ms32idf_q']], how='rrf60'), 'uses the keywords; chosen after seeing all chapters'))
    for lam in [0.1, 0.2, 0.3]:
        F = fuse([s[n] for n in ['bm25_q', 'ms32all_q', 'maxp64_q']], how='rrf60')
        out.append(S_row('neighbours', f'RRF60(bm25, MaxSim32, MaxP64) + {lam} x mean neighbour (minmax)', neighbours(F, lam, 'minmax')))
    return out

def _ltr_nested(configs, names_of):
    "Outer LOCO; inside each outer training set, an inner LOCO over its 6 chapters picks the config (features, C)."
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    s = all_signals(); X = {cfg: (features(s, names_of[cfg[0]], ('z', 'minmax', 'rrf1'), True)[0] if cfg[1] == 'f1' else features2(s, names_of[cfg[0]])) for cfg in configs}
    mk = lambda C_: make_pipeline(StandardScaler(), LogisticRegression(C=C_, max_iter=3000))
    def fit_predict(Xc, C_, tr_q, te_q):
        Xtr = np.concatenate([Xc[i, SUB[i]] for i in tr_q]); ytr = np.concatenate([LABEL[i, SUB[i]] for i in tr_q])
        m = mk(C_).fit(Xtr, ytr); S = np.full((NQ, N), -1e9)
        for i in te_q: S[i, SUB[i]] = m.decision_function(Xc[i, SUB[i]])
        return S
    final, chosen = [None] * NQ, {}
    for ch in CHAPTERS:
        inner = [c for c in CHAPTERS if c != ch]; best = None
        for cfg in configs:
            S = np.full((NQ, N), -1e9)
            for ich in inner:
                tr = np.where((QCH != ch) & (QCH != ich))[0]; te = np.where(QCH == ich)[0]
                S[te] = fit_predict(X[cfg], cfg[2], tr, te)[te]
            mask = np.isin(QCH, inner); m, r = per_q(rank(S + MASK))
            sc = objective(m[mask].mean(), r[mask].mean())
            if best is None or sc > best[0]: best = (sc, cfg)
        chosen[ch] = best[1]
        te = np.where(QCH == ch)[0]; runs = rank(fit_predict(X[best[1]], best[1][2], np.where(QCH != ch)[0], te) + MASK)
        for i in te: final[i] = runs[i]
    return final, chosen

def e_ltr():
    s = all_signals(); out = []
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    names_of = {'A': ['bm25_q', 'bm25_kw', 'ms32all_q', 'ms32idf_q', 'maxp64_q', 'sent1_q'],
                'B': ['bm25_q', 'bm25_kw', 'ms32all_q', 'ms32idf_q', 'ms64all_q', 'maxp64_q'],
                'noKW': ['bm25_q', 'ms32all_q', 'ms32idf_q', 'ms64all_q', 'maxp64_q', 'sent1_q'],
                'all': POOL}
    for sn in names_of:
        X = features2(s, names_of[sn])
        S = ltr_cv(X, lambda: make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=3000)))
        out.append(S_row('learning to rank (LOCO)', f'pointwise logistic regression C=1 (sklearn default), features z+rrf+prev/next z of set {sn}: {",".join(names_of[sn])}', S,
                         'trained on the 6 other chapters; ' + KWS(names_of[sn])))
    S = ltr_cv(features2(s, names_of['B']), lambda: PairwiseLR(1.0))
    out.append(S_row('learning to rank (LOCO)', 'pairwise logistic regression (RankSVM-style) C=1, set B', S, 'uses the keywords'))
    configs = [(sn, fx, C_) for sn in names_of for fx in ['f1', 'f2'] for C_ in [0.01, 0.1, 1.0]]
    runs, chosen = _ltr_nested(configs, names_of)
    out.append(row('learning to rank (LOCO)', 'pointwise LR, feature set x feature kind x C chosen by nested LOCO', runs, 'may use the keywords; CV chose ' + fmt_chosen(chosen)))
    return out

def e_position_prior():
    "FLAGGED: exploits the questionnaire's order (question_number follows the chapter), a benchmark artefact, not a retrieval signal."
    s = all_signals()
    qn = np.array([q['question_number'] for q in QS]); nq = {c: qn[QCH == c].max() for c in CHAPTERS}
    relq = np.array([(q['question_number'] - 0.5) / nq[q['chapter']] for q in QS]); pos = np.zeros(N)
    for c in CHAPTERS: idx = C.chapter_indices(c); pos[idx] = (np.arange(len(idx)) + 0.5) / len(idx)
    F = fuse([s[n] for n in ['bm25_q', 'ms32all_q', 'maxp64_q']], how='minmax')
    cands = {(sig, w): F + w * np.exp(-(pos[None] - relq[:, None]) ** 2 / (2 * sig ** 2)) + MASK for sig in [0.05, 0.1, 0.2, 0.3] for w in [0, 0.25, 0.5, 1, 2]}
    return [cv_row('position prior (FLAGGED)', 'minmax(bm25, MaxSim32, MaxP64) + w x Gaussian(chunk position - question position, sigma), w/sigma by CV', cands, 'uses question_number order')]

EXPERIMENTS = [e_baselines, e_bm25_tokens, e_bm25_variants, e_bm25_extras, e_rm3, e_dense, e_late_interaction, e_fusion, e_ltr, e_position_prior]

def timings():
    "Wall time of the best kind of pipeline from an empty cache: MiniLM token vectors for the 271 chunks (32-piece windows) + 191 queries."
    import tempfile, torch
    global CACHE
    old, CACHE = CACHE, Path(tempfile.mkdtemp()); t = time.perf_counter()
    try:
        maxsim_tokens(QTEXT, 'q', 32); t1 = time.perf_counter() - t
        maxsim_weighted(QTEXT, 'q', 'all', 32); maxsim_weighted(QTEXT, 'q', 'idf', 32); maxsim_tokens(QTEXT, 'q', 64); maxsim_weighted(QTEXT, 'q', 'all', 64)
        BM25(SPLIT_TOK).score_matrix(QKW); t2 = time.perf_counter() - t
    finally: CACHE = old
    return f'- MaxSim32 (encode 271 chunks in 32-piece windows + 191 queries + scoring): {t1:.0f} s; + MaxSim64 + bm25: {t2:.0f} s total (torch threads: {torch.get_num_threads()}, nice 10, shared 2-core CPU)'

def main(names=None):
    import sys, torch
    torch.manual_seed(0); np.random.seed(0); torch.set_num_threads(2)
    names = names or sys.argv[1:]
    exps = [e for e in EXPERIMENTS if not names or e.__name__ in names or e.__name__[2:] in names]
    rows, took = [], {}
    for e in exps:
        t = time.perf_counter(); rows += e(); took[e.__name__] = time.perf_counter() - t
        print(f'{e.__name__}: {took[e.__name__]:.0f} s', flush=True)
    lines = ['# Moonshot results: fastbook-benchmark, chunk 500 (271 chunks), MRR@10 / Recall@10 (score_rows), each question searched in its chapter', '',
             'Goal: MRR@10 >= 0.65 and Recall@10 >= 0.90. "CV" = leave-one-chapter-out, choosing by MRR@10 + Recall@10 on the 6 training chapters.', '',
             'Caveat: the signals and candidate pools were designed after exploring on all 7 chapters; CV tunes only inside those pools, so CV rows are mildly optimistic. Keyword rows use fts_keywords.csv (a benchmark input, not gold).', '',
             '| experiment | method | MRR@10 | Recall@10 | notes |', '|---|---|---|---|---|']
    lines += [f"| {r['experiment']} | {r['method']} | {r['mrr']:.4f} | {r['recall']:.4f} | {r['notes']} |" for r in rows]
    ok = [r for r in rows if 'ceiling' not in r['method'] and 'IN-SAMPLE' not in r['method'] and 'FLAGGED' not in r['experiment']]
    hit = [r for r in ok if r['mrr'] >= 0.65 and r['recall'] >= 0.90]
    lines += ['', '## Best rows (by MRR@10 + Recall@10; ceiling, in-sample and flagged rows left out)', '', '| experiment | method | MRR@10 | Recall@10 |', '|---|---|---|---|']
    lines += [f"| {r['experiment']} | {r['method']} | {r['mrr']:.4f} | {r['recall']:.4f} |" for r in sorted(ok, key=lambda r: -(r['mrr'] + r['recall']))[:10]]
    lines += ['', f"Goal reached by: {', '.join(r['method'] for r in hit) if hit else 'no attempt'} (best MRR@10 {max(r['mrr'] for r in ok):.4f}, best Recall@10 {max(r['recall'] for r in ok):.4f})."]
    lines += ['', '## Experiment wall times (cached neural scores)', ''] + [f'- {k}: {v:.0f} s' for k, v in took.items()]
    if os.environ.get('MOONSHOT_TIMINGS'): lines += ['', '## TIMINGS (uncached)', '', timings()]
    fn = HERE/('moonshot_results.md' if not names else f'moonshot_results-{"-".join(names)}.md')
    fn.write_text('\n'.join(lines) + '\n'); print(f'wrote {fn}')
    return rows

if __name__ == '__main__': main()
