import sys
sys.path.insert(0, "benchmarks")
from pathlib import Path
import own_data_vs_cnn as o
work = Path("/work/artifacts/draw_check/draws")
export = "/work/artifacts/draw_check/work/export"
for seed in (10001, 20001, 30001, 40001, 50001, 60001, 70001):
    folder = o.write_folder(work / str(seed), 100, seed=seed)
    acc, n = o.predict_accuracy(export, folder)
    print(seed, n, round(acc, 4), flush=True)
