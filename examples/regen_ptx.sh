#!/usr/bin/env bash
# Regenerate examples/**/kernel.ptx from kernel.cu with the one nvcc command the project uses:
#     nvcc -ptx -arch=sm_80 -O3 -lineinfo kernel.cu -o kernel.ptx
# then name the source `.file 1 "kernel.cu"` instead of by its absolute path (as the loader's
# nvcc driver does, qwengpu/ptx/nvcc.py), so that the PTX does not depend on where it was made.
# Run from anywhere; NVCC overrides the compiler (default: nvcc on PATH).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvcc="${NVCC:-nvcc}"
count=0
while IFS= read -r -d '' cu; do
    dir="$(dirname "$cu")"
    (cd "$dir" && "$nvcc" -ptx -arch=sm_80 -O3 -lineinfo kernel.cu -o kernel.ptx)
    folder="$(cd "$dir" && pwd -P)"
    sed -i -E "s|^([[:space:]]*\.file[[:space:]]+[0-9]+[[:space:]]+\")${folder}/|\1|" "$dir/kernel.ptx"
    echo "regenerated ${dir#"$here"/}/kernel.ptx"
    count=$((count + 1))
done < <(find "$here" -name kernel.cu -print0 | sort -z)
echo "$count kernels"
