#!/usr/bin/env bash
# The GPU checks of issue #22, on a machine with an NVIDIA GPU: the device tests of
# tests/gpu.rs (STICTION_REQUIRE_GPU=1: a missing GPU is a failure, not a skip) and of
# tests/gpu_fallback.rs (the NCP and soft-body solvers' GPU path), and the
# CPU-vs-GPU conjugate-residual bench (benches/gpu_pcr.rs), whose figures are written,
# with the device's name, into docs/benchmarks.md between the gpu_check markers and into
# target/gpu_check.md.
#
# Usage: scripts/gpu_check.sh                # builds with cargo (--features cuda)
#        STICTION_GPU_BIN=dir scripts/gpu_check.sh
#            # uses prebuilt binaries dir/gpu-tests, dir/gpu-fallback-tests and dir/gpu-bench (a GPU machine
#            # without a Rust toolchain; build them with scripts/gpu_check.sh --build-only dir)
# NVRTC (libnvrtc.so.13) is looked for in the CUDA toolkit and in pip's nvidia packages.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
OUTDIR="${GPU_CHECK_OUT:-$ROOT/target}"
mkdir -p "$OUTDIR"

if [[ "${1:-}" == "--build-only" ]]; then
    dest="${2:?--build-only needs a folder}"
    mkdir -p "$dest"
    json=$(cargo test --release --features cuda --test gpu --no-run --message-format=json 2>/dev/null) \
        || { echo "building tests/gpu.rs failed: run cargo test --release --features cuda --test gpu"; exit 1; }
    cp "$(grep -o '"executable":"[^"]*gpu-[^"]*"' <<<"$json" | tail -1 | cut -d'"' -f4)" "$dest/gpu-tests"
    json=$(cargo test --release --features cuda --test gpu_fallback --no-run --message-format=json 2>/dev/null) \
        || { echo "building tests/gpu_fallback.rs failed"; exit 1; }
    cp "$(grep -o '"executable":"[^"]*gpu_fallback-[^"]*"' <<<"$json" | tail -1 | cut -d'"' -f4)" "$dest/gpu-fallback-tests"
    json=$(cargo bench --features cuda --bench gpu_pcr --no-run --message-format=json 2>/dev/null) \
        || { echo "building benches/gpu_pcr.rs failed: run cargo bench --features cuda --bench gpu_pcr --no-run"; exit 1; }
    cp "$(grep -o '"executable":"[^"]*gpu_pcr-[^"]*"' <<<"$json" | tail -1 | cut -d'"' -f4)" "$dest/gpu-bench"
    strip "$dest/gpu-tests" "$dest/gpu-fallback-tests" "$dest/gpu-bench" 2>/dev/null || true
    ls -la "$dest"
    exit 0
fi

# NVRTC: the first libnvrtc.so.13 found.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so.13'; then
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64 \
        /opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib /usr/local/lib/python3*/dist-packages/nvidia/cu13/lib \
        "${VIRTUAL_ENV:-/nonexistent}"/lib/python3*/site-packages/nvidia/cu13/lib; do
        if compgen -G "$d/libnvrtc.so.13*" >/dev/null; then
            export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            echo "NVRTC from $d"
            break
        fi
    done
fi

if [[ -n "${STICTION_GPU_BIN:-}" ]]; then
    TESTS="$STICTION_GPU_BIN/gpu-tests"
    BENCH="$STICTION_GPU_BIN/gpu-bench"
else
    "$0" --build-only "$ROOT/target/gpu-bin"
    TESTS="$ROOT/target/gpu-bin/gpu-tests"
    BENCH="$ROOT/target/gpu-bin/gpu-bench"
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUTDIR/gpu_device.txt" || true

echo "==> device tests"
TESTS_RC=0
STICTION_REQUIRE_GPU=1 "$TESTS" --test-threads=1 --nocapture 2>&1 | tee "$OUTDIR/gpu_tests.log" || TESTS_RC=$?
"$(dirname "$TESTS")/gpu-fallback-tests" --test-threads=1 --nocapture 2>&1 | tee -a "$OUTDIR/gpu_tests.log" || TESTS_RC=$?

echo "==> bench"
# The SM clock while the bench runs (the figures of latency-bound kernels follow it).
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,utilization.gpu --format=csv,noheader,nounits -lms 250 \
    >"$OUTDIR/gpu_clocks.csv" 2>/dev/null &
CLOCKS_PID=$!
"$BENCH" --bench --noplot 2>&1 | tee "$OUTDIR/gpu_bench.log"
kill "$CLOCKS_PID" 2>/dev/null || true

python3 - "$OUTDIR" "$ROOT/docs/benchmarks.md" <<'PY'
import re, sys, datetime
out, doc = sys.argv[1], sys.argv[2]
log = open(f"{out}/gpu_bench.log").read()
unit = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}
times, sizes = {}, {}
for m in re.finditer(r"gpu_pcr/(\w+)/(\w+)\s+time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", log):
    times[(m.group(1), m.group(2))] = float(m.group(3)) * unit[m.group(4)]
for m in re.finditer(r"^(\w+): (\d+) rows, (\d+) nonzeros", log, re.M):
    sizes[m.group(1)] = (int(m.group(2)), int(m.group(3)))
clocks = []
try:
    for line in open(f"{out}/gpu_clocks.csv"):
        f = [x.strip() for x in line.split(",")]
        if len(f) == 3 and f[0].isdigit():
            clocks.append((int(f[0]), int(f[1]), int(f[2])))
except OSError:
    pass
clock_note = ""
if clocks:
    sm = sorted(c[0] for c in clocks)
    clock_note = (f" SM clock during the bench: median {sm[len(sm) // 2]} MHz (range {sm[0]}–{sm[-1]}, "
                  f"maximum {clocks[0][1]} MHz), {len(sm)} samples.")
dev = re.search(r"^device: (.*)$", log, re.M)
device = dev.group(1) if dev else "no GPU"
tests = open(f"{out}/gpu_tests.log").read()
lines = [l for l in tests.splitlines() if "worst iterate" in l or l.startswith("ring:") or "test result" in l]
diag = [l for l in log.splitlines() if "fixed cost of a solve" in l]
# Paper 000 Table 2 (GTX 1070, f32): solve time per step / (Newton x linear iterations).
paper = {"pile_10k": ("Humanoid Run, 10,893 contacts", 8.9, 40), "fem_60k": ("PneuNet, 2,241 tets + 532 contacts", 22.25, 320),
         "pile_936": ("Table Pile, 936 contacts", 3.7, 80)}
rows = ["| system | rows | nnz(J) | CPU f64 (ms) | GPU f64 (ms) | GPU f32 (ms) | speed-up f64 / f32 | paper 000 per iteration (µs) | ours f32 per iteration (µs) | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|"]
for name in ["pile_10k", "fem_60k", "pile_936"]:
    cpu, g64, g32 = (times.get((name, k)) for k in ("cpu_f64", "gpu_f64", "gpu_f32"))
    if cpu is None or g64 is None or g32 is None:
        continue
    scene, ms, its = paper[name]
    per_paper = ms / its * 1e3
    per_ours = g32 / 50 * 1e3
    r, nnz = sizes.get(name, (0, 0))
    rows.append(f"| {name} | {r:,} | {nnz:,} | {cpu:.2f} | {g64:.3f} | {g32:.3f} | {cpu / g64:.0f}× / {cpu / g32:.0f}× | "
                f"{per_paper:.0f} ({scene}) | {per_ours:.1f} | {per_paper / per_ours:.1f}× |")
stamp = datetime.date.today().isoformat()
md = "\n".join([f"<!-- gpu_check:begin -->",
    f"Measured {stamp} by `scripts/gpu_check.sh` on **{device}** (CPU column: one core of the same machine), 50 PCR iterations from zero, tolerance 0.{clock_note}",
    "", *rows, "", "Where the time goes (the bench's diagnostics, wall clock):", "", "```", *diag, "```",
    "", "Device tests (tests/gpu.rs and tests/gpu_fallback.rs, `STICTION_REQUIRE_GPU=1`):", "", "```", *lines, "```", "<!-- gpu_check:end -->"])
open(f"{out}/gpu_check.md", "w").write(md + "\n")
text = open(doc).read()
if "<!-- gpu_check:begin -->" in text:
    text = re.sub(r"<!-- gpu_check:begin -->.*?<!-- gpu_check:end -->", lambda _: md, text, flags=re.S)
else:
    text += "\n## GPU conjugate residuals\n\n" + md + "\n"
open(doc, "w").write(text)
print(md)
PY
if [[ $TESTS_RC != 0 ]]; then
    echo "device tests FAILED (exit $TESTS_RC): see $OUTDIR/gpu_tests.log"
    exit "$TESTS_RC"
fi
