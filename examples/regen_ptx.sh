#!/usr/bin/env bash
# Regenerate examples/**/kernel.ptx from kernel.cu with the one nvcc command the project uses:
#     nvcc -ptx -arch=sm_80 -O3 kernel.cu -o kernel.ptx
# Run from anywhere; NVCC overrides the compiler (default: nvcc on PATH).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvcc="${NVCC:-nvcc}"
count=0
while IFS= read -r -d '' cu; do
    dir="$(dirname "$cu")"
    (cd "$dir" && "$nvcc" -ptx -arch=sm_80 -O3 kernel.cu -o kernel.ptx)
    echo "regenerated ${dir#"$here"/}/kernel.ptx"
    count=$((count + 1))
done < <(find "$here" -name kernel.cu -print0 | sort -z)
echo "$count kernels"
