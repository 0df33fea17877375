#!/usr/bin/env bash
# The checkpoint and peak memory of a 2-agent, 5-seed run with a 50,000-item buffer, at
# the commit checked out: run from the repository root, with $BANDITS_DATA_DIR set.
# Prints: the run's peak resident memory (kB), the checkpoint's size (bytes), and the
# median seconds of 3 checkpoint writes of that state (bandits.checkpoint.save).
set -euo pipefail
out=$(mktemp -d)/run
/usr/bin/time -f "peak_rss_kb %M" python -m bandits.run --agent bbb greedy --seeds 5 \
    --steps 200 --buffer-size 50000 --workers 1 --no-progress --out "$out" > /dev/null
echo "checkpoint_bytes $(stat -c %s "$out/checkpoint.pt")"
python - "$out" <<'PY'
import statistics, sys, time
from pathlib import Path
from bandits import checkpoint
path = Path(sys.argv[1]) / "checkpoint.pt"
state = checkpoint.load(path, "bandits.run")
times = []
for _ in range(3):
    tic = time.perf_counter()
    checkpoint.save(path.with_name("again.pt"), "bandits.run", state)
    times.append(time.perf_counter() - tic)
print(f"checkpoint_write_seconds {statistics.median(times):.3f}")
PY
for f in metrics.csv summary.csv phases.csv memory.csv; do md5sum "$out/$f"; done
