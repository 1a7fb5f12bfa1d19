"""Encoding throughput of vector shards in this process vs on Ray (`--engine ray`), and the resume test of a killed job.

The passages are the fastbook chapters cut into --chunk-size-token chunks (`build_corpus`), repeated until there are
--passages of them (each repeat tagged, so no two texts are equal), encoded with the bundled MiniLM into shards of
--shard-size rows. Each step runs in its own process (its peak memory, ru_maxrss, is its own; Ray's workers are not
counted in it):
- local: `encode_shards` with the local engine, torch using --threads threads: seconds, passages/s;
- ray: the same with `RayEngine(num_cpus=--threads)`: --threads actors of one CPU, so one torch thread, each; Ray's
  start and the actors' model loading are timed apart from the encoding; the shards must equal local's, byte for byte;
- resume: the local step again in a child process, SIGKILLed half-way through the first shard after half of them (the
  listing is watched), then run again to the end: its shards must equal local's. The time lost is the killed partial
  shard plus the second run's start (interpreter, imports, model), both measured in this step (lost_s); the two runs'
  total minus the uninterrupted run's (time_lost_s) says the same only on an otherwise idle machine.
Usage: python benchmarks/encode_scale.py [--passages 3000] [--shard-size 500] [--threads 2] [--out DIR]
       python benchmarks/encode_scale.py STEP --dir DIR [...]          (one step; prints its JSON)
Quick: python benchmarks/encode_scale.py --passages 1000 --shard-size 100
Without --out, everything goes to a new temporary folder, removed at the end.
"""
import argparse, json, os, resource, shutil, signal, subprocess, sys, tempfile, time
from pathlib import Path

def peak_mb() -> float:
    "Peak resident memory of this process so far, in MB."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def passages(a) -> list[str]:
    "--passages texts: the chapters' chunks, repeated, each repeat tagged."
    from fastbook_bench.chunking import build_corpus
    chunks = build_corpus(chunk_size=a.chunk_size).passages
    return [f'{chunks[i % len(chunks)]} ({i // len(chunks)})' for i in range(a.passages)]

def encode(a, engine, folder) -> dict:
    "Encode the passages into `folder` with `engine`; the timings."
    from fastbook_bench.engines import EncoderSpec, sentence_encoder
    from fastbook_bench.shards import encode_shards, read_listing
    texts, t0 = passages(a), time.perf_counter()
    done = sum(s['stop'] - s['start'] for s in (read_listing(folder) or {'shards': []})['shards'])  # when resuming
    enc, settings = engine.encoder(EncoderSpec(sentence_encoder, dict(model='bundled')))
    t1 = time.perf_counter()
    encode_shards(texts, folder, enc, settings=settings, shard_size=a.shard_size, total=len(texts), progress=False)
    t2 = time.perf_counter()
    return dict(load_s=round(t1 - t0, 1), encoded=len(texts) - done, encode_s=round(t2 - t1, 1),
                passages_per_s=round((len(texts) - done) / (t2 - t1), 1),
                info=enc.info() if hasattr(enc, 'info') else None)

def same_shards(a, folder) -> bool:
    "Whether `folder` holds the local step's shards and listing, byte for byte."
    ref = Path(a.dir)/'local'
    return sorted(os.listdir(ref)) == sorted(os.listdir(folder)) and all(
        (ref/f).read_bytes() == (Path(folder)/f).read_bytes() for f in os.listdir(ref))

def step_local(a) -> dict:
    import torch
    from fastbook_bench.engines import LocalEngine
    torch.set_num_threads(a.threads)
    r = encode(a, LocalEngine(), Path(a.dir)/a.folder)
    return dict(step='local', passages=a.passages, shard_size=a.shard_size, torch_threads=torch.get_num_threads(),
                **{k: v for k, v in r.items() if k != 'info'}, peak_rss_mb=round(peak_mb()), load=os.getloadavg()[0])

def step_ray(a) -> dict:
    from fastbook_bench.ray_engine import RayEngine
    t = time.perf_counter(); eng = RayEngine(num_cpus=a.threads); init = time.perf_counter() - t
    r = encode(a, eng, Path(a.dir)/'ray')
    threads = [i['torch_threads'] for i in r.pop('info')]
    return dict(step='ray', passages=a.passages, actors=eng.actors, actor_torch_threads=threads,
                ray_init_s=round(init, 1), **r, identical_to_local=same_shards(a, Path(a.dir)/'ray'),
                driver_peak_rss_mb=round(peak_mb()), load=os.getloadavg()[0])

def step_resume(a) -> dict:
    from fastbook_bench.shards import read_listing
    folder, n = Path(a.dir)/'killed', -(-a.passages // a.shard_size)
    listed = lambda: len((read_listing(folder) or {'shards': []})['shards']) if (folder/'shards.json').exists() else 0
    args = [sys.executable, __file__, 'local', '--dir', a.dir, '--folder', 'killed', *a.pass_on]
    t0 = time.perf_counter(); p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []  # when each shard got listed
    while listed() < n // 2 and p.poll() is None:
        if listed() > len(times): times.append(time.perf_counter())
        time.sleep(0.05)
    times.append(time.perf_counter())
    per_shard = (times[-1] - times[0]) / max(len(times) - 1, 1)
    time.sleep(per_shard / 2)  # half-way through the next shard
    at_kill = listed(); p.send_signal(signal.SIGKILL); p.wait(); t1 = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True, check=True); t2 = time.perf_counter()
    resumed = json.loads(r.stdout.strip().splitlines()[-1])
    restart = (t2 - t1) - resumed['encode_s']  # the second run's start: interpreter, imports, passages, model
    return dict(step='resume', shards=n, listed_at_kill=at_kill, killed_run_s=round(t1 - t0, 1),
                resumed_run_s=round(t2 - t1, 1), total_s=round(t2 - t0, 1), partial_shard_s=round(per_shard / 2, 1),
                restart_s=round(restart, 1), lost_s=round(per_shard / 2 + restart, 1), resumed=resumed,
                identical_to_local=same_shards(a, folder))

STEPS = dict(local=step_local, ray=step_ray, resume=step_resume)

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('step', nargs='?', choices=list(STEPS))
    p.add_argument('--dir'); p.add_argument('--out'); p.add_argument('--folder', default='local')
    p.add_argument('--passages', type=int, default=3000); p.add_argument('--chunk-size', type=int, default=100)
    p.add_argument('--shard-size', type=int, default=500); p.add_argument('--threads', type=int, default=2)
    a = p.parse_args()
    a.pass_on = [f'--passages={a.passages}', f'--chunk-size={a.chunk_size}', f'--shard-size={a.shard_size}',
                 f'--threads={a.threads}']
    if a.step: print(json.dumps(STEPS[a.step](a))); return
    d = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix='encode_scale.'))
    results = {}
    try:
        for step in STEPS:
            t = time.perf_counter()
            r = subprocess.run([sys.executable, __file__, step, '--dir', str(d), *a.pass_on], capture_output=True,
                               text=True)
            if r.returncode: sys.exit(f"{step} failed:\n{r.stderr[-3000:]}")
            results[step] = dict(json.loads(r.stdout.strip().splitlines()[-1]), wall_s=round(time.perf_counter() - t, 1))
            print(json.dumps(results[step]), flush=True)
        local, ray_, resume = results['local'], results['ray'], results['resume']
        print(json.dumps(dict(summary=True, time_lost_s=round(resume['total_s'] - local['wall_s'], 1),
                              ray_over_local=round(ray_['passages_per_s'] / local['passages_per_s'], 2))))
    finally:
        if not a.out: shutil.rmtree(d, ignore_errors=True)

if __name__ == '__main__': main()
