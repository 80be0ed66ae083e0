#!/usr/bin/env bash
# The whole QwenGPU (4 lanes, 8 warps) compiled and the example corpus run inside it on a CUDA
# machine, in one go:
#
#     bench/corpus_on_gpu.sh [LOG_DIR]
#
# 1. `hdlc compile specs/qwengpu.hdl --target TARGET` (default qwen3.5-2b: fp32, 2.6 G
#    parameters, 10.5 GB), unless QWENGPU_MODEL names a directory that holds a checkpoint;
# 2. bench/bench_launch.py --batch on three short kernels beside the interpreter, with the
#    checkpoint's nonzeros per layer (BENCH=0 leaves it out);
# 3. bench/corpus_on_model.py: the example kernels (KERNELS, comma-separated: default all)
#    of at most MAX_RECORDS records (default 140; MAX_RECORDS= for no limit), shortest first,
#    BATCH launches a batch (default 16), the interpreter in lockstep and the buffers against
#    expected.json.
# The model runs on ENGINE (default sparse: the sparse engine's torch version on DEVICE;
# ENGINE=transformers: stock generate()).
# BUDGET_S seconds in all (default 560); no corpus batch starts after 60% of what is left.
# Logs go to LOG_DIR (default out/corpus-gpu). RESULTS=FILE appends a JSON line per kernel
# to FILE and skips the kernels FILE records as passed on this very checkpoint (corpus_on_model
# --results/--resume), so several short device sessions can share out the corpus; with it the
# batch still running 45 s before the end pauses (--pause-at) and the next session goes on
# from the ids its launches wrote.
# Needs ~24 GB of GPU memory.
set -o pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${1:-out/corpus-gpu}
DEVICE=${QWENGPU_DEVICE:-cuda}
MODEL=${QWENGPU_MODEL:-out/qwengpu-2b}
BUDGET_S=${BUDGET_S:-560}
TARGET=${TARGET:-qwen3.5-2b}
BATCH=${BATCH:-16}
MAX_RECORDS=${MAX_RECORDS-140}
CHOICE=()
[ -n "$MAX_RECORDS" ] && CHOICE+=(--max-records "$MAX_RECORDS")
[ -n "${KERNELS:-}" ] && CHOICE+=(--kernels "$KERNELS")
RESUME=()
[ -n "${RESULTS:-}" ] && RESUME=(--results "$RESULTS" --resume)
export PYTHONUNBUFFERED=1
mkdir -p "$LOG_DIR"
left() { echo $(( BUDGET_S - SECONDS > 5 ? BUDGET_S - SECONDS : 5 )); }
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers",
    transformers.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu")'

status=0
if [ ! -f "$MODEL/model.safetensors" ]; then
    timeout "$(left)" python3 -m qwengpu.cli compile specs/qwengpu.hdl --target "$TARGET" \
        -o "$MODEL" 2>&1 | tail -n 3 | tee "$LOG_DIR/compile.log" || exit 1
fi
if [ "${BENCH:-1}" != 0 ]; then
    echo "== bench ($SECONDS s)"
    timeout "$(left)" python3 bench/bench_launch.py --model "$MODEL" --device "$DEVICE" --batch \
        --engine "${ENGINE:-sparse}" \
        --kernels serial_mad,pair_ops,warp_ops 2>&1 \
        | grep -v '^\[transformers\]' | tee "$LOG_DIR/bench.log" || status=1
fi
echo "== corpus ($SECONDS s)"
[ -n "${RESULTS:-}" ] && RESUME+=(--pause-at $(( $(left) > 60 ? $(left) - 45 : 15 )))
timeout "$(left)" python3 bench/corpus_on_model.py --model "$MODEL" --device "$DEVICE" \
    --engine "${ENGINE:-sparse}" \
    --batch "$BATCH" "${CHOICE[@]}" --budget $(( (BUDGET_S - SECONDS) * 6 / 10 )) \
    "${RESUME[@]}" 2>&1 | grep -v '^\[transformers\]' | tee "$LOG_DIR/corpus.log" || status=1
echo "== done ($SECONDS s), status $status"
exit $status
